import Foundation
import NIOCore
import OrchardCore
import PostgresNIO
import Synchronization

/// Pooled connections with a deadline. postgres-nio's pool keeps a request waiting until a
/// connection frees up or the database comes back; while the database is down that is as long
/// as the outage. Every statement and transaction here waits at most the configured
/// `acquireTimeout` for its connection, then fails with ``StoreError/Code/unavailable``,
/// having sent nothing.
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
    /// leased within `acquireTimeout`. A child task holds the lease while this task runs the body
    /// on the connection it hands over, and gives the connection back when the body returns.
    func leased<T>(_ body: (PostgresConnection) async throws -> T) async throws -> T {
        let race = LeaseRace()
        let (connections, handOver) = AsyncThrowingStream.makeStream(of: PostgresConnection.self)
        let done = Gate()
        let timeout = acquireTimeout
        return try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { [client] in
                do {
                    try await client.withConnection { connection in
                        guard race.acquire() else { return }
                        handOver.yield(connection)
                        await done.wait()
                    }
                } catch {
                    handOver.finish(throwing: error)
                }
            }
            group.addTask {
                try? await Task.sleep(for: timeout)
                if race.abandon() {
                    handOver.finish(
                        throwing: StoreError(
                            code: .unavailable, message: "no PostgreSQL connection within \(timeout.milliseconds) ms"))
                }
            }
            defer {
                done.open()
                group.cancelAll()
            }
            var iterator = connections.makeAsyncIterator()
            guard let connection = try await iterator.next() else { throw CancellationError() }
            return try await body(connection)
        }
    }

    /// Whether `error` says the database could not be reached or went away: the connection was
    /// refused, closed or lost, or the server is shutting down or starting (SQLSTATE class 08,
    /// and 57P01–57P03).
    static func isUnreachable(_ error: any Error) -> Bool {
        guard let failure = error as? PSQLError else { return error is NIOConnectionError || error is IOError }
        if let state = failure.sqlState {
            return state.hasPrefix("08") || ["57P01", "57P02", "57P03"].contains(state)
        }
        return [.serverClosedConnection, .clientClosedConnection, .connectionError, .uncleanShutdown, .poolClosed]
            .contains(failure.code)
    }
}

extension Duration {
    /// Whole milliseconds, for messages.
    var milliseconds: Int64 { components.seconds * 1000 + components.attoseconds / 1_000_000_000_000_000 }
}
