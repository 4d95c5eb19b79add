import Foundation
import NIOCore
import NIOPosix
import OrchardCore
import PostgresNIO
import Synchronization

/// Pooled connections with deadlines. postgres-nio's pool keeps a request waiting until a
/// connection frees up or the database comes back; while the database is down that is as long
/// as the outage. Every statement and transaction here waits at most the configured
/// `acquireTimeout` for its connection, then fails with ``StoreError/Code/unavailable``,
/// having sent nothing; and once it has one, it takes at most `callTimeout` there, then fails
/// the same way, its outcome unknown (a write's caller reads again before it decides).
extension PostgresStore {
    /// Whether the request got its connection before its deadline: exactly one of the two wins.
    final class LeaseRace: Sendable {
        private let state = Atomic<Int>(0)
        /// The connection came first: the body runs.
        func acquire() -> Bool { state.compareExchange(expected: 0, desired: 1, ordering: .acquiringAndReleasing).exchanged }
        /// The deadline came first: the request is given up, and a connection leased later is handed back unused.
        func abandon() -> Bool { state.compareExchange(expected: 0, desired: 2, ordering: .acquiringAndReleasing).exchanged }
    }

    /// Opened once the body is done with the connection. Waiting on it ignores cancellation: a
    /// lease given back while the body still used its connection would let another request
    /// send on it at the same time.
    final class Gate: Sendable {
        private let state = Mutex<(open: Bool, waiter: CheckedContinuation<Void, Never>?)>((false, nil))

        func wait() async {
            await withCheckedContinuation { continuation in
                let resumeNow = state.withLock { state in
                    if state.open { return true }
                    state.waiter = continuation
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        }

        func open() {
            let waiter = state.withLock { state in
                state.open = true
                defer { state.waiter = nil }
                return state.waiter
            }
            waiter?.resume()
        }
    }

    /// Runs `body` on a pooled connection, or throws ``StoreError/Code/unavailable`` when none is
    /// leased within `acquireTimeout`, or when `body` outlasts `callTimeout` on it. Tells
    /// ``availability`` whether the database answered or could not be reached.
    ///
    /// `body` runs in a task of its own, so that the caller is answered at the deadline even when
    /// `body` never returns: postgres-nio never completes a statement written to a connection that
    /// has just closed (its write carries no promise), and does not honour cancellation while it
    /// waits for one. A request would wait forever, and a graceful shutdown would wait for it
    /// until ServiceLifecycle's cancellation timeout traps. Such a task is left suspended, with
    /// its connection closed and given back to the pool.
    func leased<T: Sendable>(_ body: @escaping @Sendable (PostgresConnection) async throws -> T) async throws -> T {
        do {
            let value = try await Self.abandonable { [self] abandon in try await leasedWithDeadlines(body, abandon: abandon) }
            availability?.report(available: true)
            return value
        } catch {
            if (error as? StoreError)?.code == .unavailable || Self.isUnreachable(Self.cause(error)) {
                availability?.report(available: false)
            }
            throw error
        }
    }

    /// The result of `work`, run in a task of its own, or the first error `work` hands to its
    /// `abandon` argument, whichever comes first. Cancelling the caller cancels the task.
    static func abandonable<T: Sendable>(
        _ work: @escaping @Sendable (_ abandon: @escaping @Sendable (any Error) -> Void) async throws -> T
    ) async throws -> T {
        let outcome = Outcome<T>()
        let executor = LoopExecutor.current()
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                outcome.await(continuation)
                outcome.attach(
                    Task(executorPreference: executor) {
                        do {
                            outcome.finish(.success(try await work { outcome.finish(.failure($0)) }))
                        } catch {
                            outcome.finish(.failure(error))
                        }
                    })
            }
        } onCancel: {
            outcome.cancel()
        }
    }

    /// Who answers an ``abandonable(_:)`` caller first: the work's result or its abandonment;
    /// the other is dropped.
    final class Outcome<T: Sendable>: Sendable {
        private struct State {
            var continuation: CheckedContinuation<T, any Error>?
            var task: Task<Void, Never>?
            var cancelled = false
        }
        private let state = Mutex(State())

        func await(_ continuation: CheckedContinuation<T, any Error>) { state.withLock { $0.continuation = continuation } }

        func attach(_ task: Task<Void, Never>) {
            let cancelNow = state.withLock { state in
                state.task = task
                return state.cancelled
            }
            if cancelNow { task.cancel() }
        }

        func cancel() {
            let task = state.withLock { state in
                state.cancelled = true
                return state.task
            }
            task?.cancel()
        }

        func finish(_ result: Result<T, any Error>) {
            let continuation = state.withLock { state in
                defer { state.continuation = nil }
                return state.continuation
            }
            continuation?.resume(with: result)
        }
    }

    /// A child task holds the lease while this task runs the body on the connection it hands
    /// over, and gives the connection back when the body returns. The deadlines are timers on the
    /// pool's event loops, not tasks that sleep: the one for the connection abandons the request
    /// when none came in time; the one for the call closes the connection if the body is still
    /// running after `callTimeout`: when packets are dropped rather than refused, neither the
    /// server's timeouts (it may never see the statement, or its answer never arrives) nor the
    /// kernel (its keepalive counts in minutes) end the wait. Two sleeping tasks a call cost
    /// about as much as the rest of the lease together (issue 51).
    private func leasedWithDeadlines<T>(
        _ body: (PostgresConnection) async throws -> T, abandon: @escaping @Sendable (any Error) -> Void
    ) async throws -> T {
        let race = LeaseRace()
        let (connections, handOver) = AsyncThrowingStream.makeStream(of: PostgresConnection.self)
        let done = Gate()
        let watch = CallWatch()
        let (timeout, deadline) = (acquireTimeout, callTimeout)
        let waiting = timers.next().scheduleTask(in: TimeAmount(timeout)) {
            if race.abandon() {
                handOver.finish(
                    throwing: StoreError(code: .unavailable, message: "no PostgreSQL connection within \(timeout.milliseconds) ms"))
            }
        }
        return try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { [client] in
                do {
                    try await client.withConnection { connection in
                        guard race.acquire() else { return }
                        waiting.cancel()
                        handOver.yield(connection)
                        await done.wait()
                        // A connection that is gone goes back to the pool only once the pool knows:
                        // a statement written to a closed connection never completes.
                        if watch.broken || connection.isClosed {
                            connection.close().whenComplete { _ in }
                            try? await connection.closeFuture.get()
                        }
                    }
                } catch {
                    handOver.finish(throwing: error)
                }
            }
            var running: Scheduled<Void>?
            defer {
                running?.cancel()
                watch.finish()
                done.open()
                group.cancelAll()
            }
            var iterator = connections.makeAsyncIterator()
            guard let connection = try await iterator.next() else { throw CancellationError() }
            guard !connection.isClosed else {
                watch.breaks()
                throw StoreError(code: .unavailable, message: "the PostgreSQL connection was lost")
            }
            keepAlive(connection)
            let expired = StoreError(
                code: .unavailable,
                message: "PostgreSQL did not answer within \(deadline.milliseconds) ms (store.postgres.callTimeoutMilliseconds); "
                    + "the connection was closed, and whether a write it carried was committed is not known")
            running = connection.eventLoop.scheduleTask(in: TimeAmount(deadline)) {
                guard watch.expire() else { return }
                // Closing fails the statement the connection holds at once; the pool drops the
                // connection. A statement written after the close would never complete: the
                // caller is answered once it is closed, and the connection goes back to the pool closed.
                connection.close().whenComplete { _ in }
                connection.closeFuture.whenComplete { _ in
                    abandon(expired)
                    done.open()
                }
            }
            do {
                return try await body(connection)
            } catch {
                if Self.endsSession(Self.cause(error)) { watch.breaks() }
                guard watch.expired else { throw error }
                throw expired
            }
        }
    }

    /// Whether a call outlasted its deadline: either the call finishes first, or the deadline
    /// closes its connection, never both, and never a connection already handed back.
    final class CallWatch: Sendable {
        private let state = Mutex<(finished: Bool, expired: Bool, broken: Bool)>((false, false, false))
        /// The deadline passed: true when the call was still running (its connection is to be closed).
        func expire() -> Bool {
            state.withLock { state in
                guard !state.finished else { return false }
                state.expired = true
                state.broken = true
                return true
            }
        }
        /// The connection is gone: it is closed before it goes back to the pool.
        func breaks() { state.withLock { $0.broken = true } }
        var broken: Bool { state.withLock { $0.broken } }
        /// The call is done with its connection.
        func finish() { state.withLock { $0.finished = true } }
        var expired: Bool { state.withLock { $0.expired } }
    }

    /// Whether `error` says the database could not be reached, went away or gave up in time: the
    /// connection was refused, closed or lost, the server is shutting down or starting (SQLSTATE
    /// class 08, and 57P01–57P03), or one of the session's bounds ended the call (57014 a
    /// statement or lock wait past `statement_timeout`, 55P03 past `lock_timeout`, 25P03 and
    /// 57P05 a session ended idle). Each leaves nothing committed, and is worth trying again.
    static func isUnreachable(_ error: any Error) -> Bool {
        if let state = (error as? PSQLError)?.sqlState, ["57014", "55P03"].contains(state) { return true }
        return endsSession(error)
    }

    /// Whether `error` means the connection is gone (lost, closed, or ended by the server), so
    /// nothing more can be sent on it.
    static func endsSession(_ error: any Error) -> Bool {
        guard let failure = error as? PSQLError else { return error is NIOConnectionError || error is IOError }
        if let state = failure.sqlState {
            return state.hasPrefix("08") || ["57P01", "57P02", "57P03", "25P03", "57P05"].contains(state)
        }
        return [.serverClosedConnection, .clientClosedConnection, .connectionError, .uncleanShutdown, .poolClosed]
            .contains(failure.code)
    }
}

extension Duration {
    /// Whole milliseconds, for messages.
    var milliseconds: Int64 { components.seconds * 1000 + components.attoseconds / 1_000_000_000_000_000 }
}

/// The event loop a call comes from, as a task executor: a request runs on its connection's loop
/// (the server's executor middleware), and the call's own task runs there too, so PostgreSQL's
/// answer resumes it with one hop from the connection's loop, not through a thread of Swift's
/// cooperative pool and back. A caller on no loop keeps the default executor.
final class LoopExecutor: TaskExecutor {
    let eventLoop: any EventLoop

    private init(_ eventLoop: any EventLoop) { self.eventLoop = eventLoop }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        eventLoop.execute { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
    }

    /// One executor per loop, made once.
    private static let made = Mutex<[ObjectIdentifier: LoopExecutor]>([:])

    /// The executor of the loop this thread runs, if it runs one.
    static func current() -> LoopExecutor? {
        guard let loop = MultiThreadedEventLoopGroup.currentEventLoop else { return nil }
        return made.withLock { made in
            if let executor = made[ObjectIdentifier(loop)] { return executor }
            let executor = LoopExecutor(loop)
            made[ObjectIdentifier(loop)] = executor
            return executor
        }
    }
}
