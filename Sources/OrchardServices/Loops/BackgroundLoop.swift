import ServiceLifecycle
import Synchronization

/// Runs `pass`, then waits `interval`, again and again until shutdown. A shutdown cuts only the
/// wait: a pass in progress (a webhook being sent, a payment re-sent) finishes first, unless the
/// drain timeout passes and the task is cancelled.
/// With `wakeUp`, its signal also ends the wait.
func repeatUntilShutdown(every interval: Duration, wakeUp: WakeUp? = nil, _ pass: () async -> Void) async {
    while !Task.isShuttingDownGracefully && !Task.isCancelled {
        await pass()
        if let wakeUp {
            await wakeUp.wait(upTo: interval)
        } else {
            try? await cancelWhenGracefulShutdown { try await Task.sleep(for: interval) }
        }
    }
}

/// Lets a background loop's wait end early: a worker that knows more work is due ``signal()``s,
/// and the loop's next ``wait(upTo:)`` returns at once instead of at the end of its interval. A
/// signal given while nobody waits is kept for the next wait; several count as one.
final class WakeUp: Sendable {
    private struct State: Sendable {
        var signalled = false
        var waiter: CheckedContinuation<Void, Never>?
    }
    private let state = Mutex(State())

    func signal() {
        let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            guard let waiter = state.waiter else {
                state.signalled = true
                return nil
            }
            state.waiter = nil
            return waiter
        }
        waiter?.resume()
    }

    /// Waits until a signal, `interval`, or a graceful shutdown, whichever comes first.
    func wait(upTo interval: Duration) async {
        await withTaskGroup(of: Void.self) { group in
            group.addTask { try? await cancelWhenGracefulShutdown { try await Task.sleep(for: interval) } }
            group.addTask { await self.signalled() }
            await group.next()
            group.cancelAll()
        }
    }

    private func signalled() async {
        await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let now = state.withLock { state -> Bool in
                    // Cancelled before the continuation was stored: the handler found no waiter.
                    if state.signalled || Task.isCancelled {
                        state.signalled = false
                        return true
                    }
                    state.waiter = continuation
                    return false
                }
                if now { continuation.resume() }
            }
        } onCancel: {
            let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
                defer { state.waiter = nil }
                return state.waiter
            }
            waiter?.resume()
        }
    }
}
