import Foundation
import Logging
import NIOCore
import OrchardCore
import OrchardTesting
import PostgresNIO
import Synchronization
import Testing

@testable import OrchardPostgres

/// The bounds a store call keeps whatever the network does: the server's timeouts reach every
/// pooled session, the socket has TCP keepalive, and a call through a network that drops
/// packets (a black-holed loopback proxy) fails as ``StoreError/Code/unavailable`` within the
/// acquire timeout plus the call timeout, while the server frees the row locks the vanished
/// client held.
@Suite("PostgreSQL store: every call bounded, whatever the network does", .serialized, .enabled(if: PostgresServer.enabled))
struct PostgresSessionLimitsTests {
    static let limits = PostgresSettings.SessionLimits(
        statementTimeout: .milliseconds(1500), lockTimeout: .milliseconds(700), idleInTransactionTimeout: .milliseconds(1000),
        callTimeout: .milliseconds(2000), keepaliveIdle: .seconds(7), keepaliveInterval: .seconds(2), keepaliveCount: 4)
    /// The documented bound of one call: the acquire timeout (500 ms) plus the call timeout (2 s),
    /// with room for a loaded 2-core machine. Before, a call through the black hole never ended.
    static let bound: Duration = .seconds(8)

    /// What the store's availability reported, in order, and whether the transaction ended.
    final class Seen: Sendable {
        let reported = Mutex<[Bool]>([])
        let ended = Atomic<Bool>(false)
    }

    /// A call's outcome, once it has one.
    final class Outcome: Sendable {
        let result = Mutex<Result<Void, any Error>?>(nil)
    }

    /// Runs `call` in a task of its own and waits for its outcome at most `bound`: a call that
    /// hangs is reported as nil (and left to end once the network is back), not waited for.
    static func outcome(within bound: Duration, _ call: @escaping @Sendable () async throws -> Void) async throws
        -> Result<Void, any Error>?
    {
        let outcome = Outcome()
        Task {
            do {
                try await call()
                outcome.result.withLock { $0 = .success(()) }
            } catch {
                outcome.result.withLock { $0 = .failure(error) }
            }
        }
        return try await Eventually.value(timeout: bound) { outcome.result.withLock { $0 } }
    }

    static func open(_ settings: PostgresSettings) async throws -> PostgresStore {
        try await PostgresStore.open(settings, logger: Logger(label: "orchard.test"), eventLoops: PostgresServer.storeLoops)
    }

    @Test("the statement, lock and idle-in-transaction timeouts and TCP keepalive reach each pooled session")
    func settingsReachTheSession() async throws {
        let server = try await PostgresServer.shared()
        try await server.withDatabase(poolSize: 2) { settings in
            var settings = settings
            settings.limits = Self.limits
            try await Self.open(settings).withRunning { store in
                var shown: [String: String] = [:]
                for name in [
                    "statement_timeout", "lock_timeout", "idle_in_transaction_session_timeout", "tcp_keepalives_idle",
                    "tcp_keepalives_interval", "tcp_keepalives_count", "tcp_user_timeout",
                ] {
                    shown[name] = try await store.rows(PostgresQuery(unsafeSQL: "SHOW \(name)")).first?.text(name)
                }
                #expect(
                    shown == [
                        "statement_timeout": "1500ms", "lock_timeout": "700ms", "idle_in_transaction_session_timeout": "1s",
                        "tcp_keepalives_idle": "7", "tcp_keepalives_interval": "2", "tcp_keepalives_count": "4",
                        "tcp_user_timeout": "15000",
                    ])
                // This end's socket too: a connection leased once has SO_KEEPALIVE set.
                let keepalive = try await store.leased { connection in
                    try await PostgresStore.channel(of: connection)?.getOption(ChannelOptions.socketOption(.so_keepalive)).get()
                }
                #expect(keepalive.map { $0 != 0 } == true, "SO_KEEPALIVE on the client's socket: \(String(describing: keepalive))")
            }
        }
    }

    @Test("through a black hole: reads, writes and the check fail as unavailable within the bound; the server frees the row locks")
    func blackHole() async throws {
        let server = try await PostgresServer.shared()
        try await server.withDatabase(poolSize: 2) { direct in
            let proxy = try await BlackHoleProxy(upstreamPort: server.port)
            var settings = direct
            settings.endpoint = .tcp(host: "127.0.0.1", port: proxy.port)
            settings.acquireTimeout = .milliseconds(500)
            settings.limits = Self.limits
            let store = try await Self.open(settings)
            let seen = Seen()
            store.availability?.observe { available in seen.reported.withLock { $0.append(available) } }
            try await store.withRunning { (store: PostgresStore) async throws -> Void in
                #expect(
                    try await Eventually.until(every: .milliseconds(100)) {
                        if (try? await store.insert(PostgresOutageTests.order("held"))) != nil { return true }
                        return (try? await store.order(id: "held")) != nil  // written, its answer lost
                    })

                // A transaction that locks the order's row, then loses the network before it commits.
                let holder = Task {
                    defer { seen.ended.store(true, ordering: .releasing) }
                    return try await store.transaction { connection in
                        _ = try await connection.rows("SELECT id FROM orders WHERE id = 'held' FOR UPDATE", store.logger)
                        await proxy.blackHole()
                        _ = try await connection.rows("SELECT 1", store.logger)
                    }
                }
                let clock = ContinuousClock()
                let started = clock.now
                #expect(
                    try await Eventually.until(timeout: .seconds(20)) { seen.ended.load(ordering: .acquiring) },
                    "the transaction never ended")
                if seen.ended.load(ordering: .acquiring) {
                    await #expect { try await holder.value } throws: { ($0 as? StoreError)?.code == .unavailable }
                }
                // The server's end: the backend left idle in the transaction is ended, and its row lock with it.
                let locks =
                    "SELECT count(*) FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid "
                    + "WHERE a.datname = '\(direct.database)' AND l.pid <> pg_backend_pid()"
                #expect(
                    try await Eventually.until(timeout: .seconds(20), every: .milliseconds(200)) {
                        try await server.query(direct.database, locks) == "0"
                    }, "a lock is still held for the client that vanished")

                for call in ["read", "write", "check"] {
                    let started = clock.now
                    let outcome = try await Self.outcome(within: Self.bound) {
                        switch call {
                        case "read": _ = try await store.order(id: "held")
                        case "write": try await store.insert(PostgresOutageTests.order("in-the-black-hole"))
                        default: try await store.checkAvailable()
                        }
                    }
                    let code: StoreError.Code?
                    if case .failure(let error) = outcome { code = (error as? StoreError)?.code } else { code = nil }
                    #expect(code == .unavailable, "\(call): \(outcome.map { "\($0)" } ?? "no answer within \(Self.bound)")")
                    let waited = clock.now - started
                    #expect(waited < Self.bound, "\(call) answered after \(waited)")
                }
                #expect(seen.reported.withLock { $0.first } == false, "the failed calls told the store's availability")
                print("black hole: the transaction failed after \(clock.now - started) in all; reported \(seen.reported.withLock { $0 })")

                await proxy.restore()
                #expect(
                    try await Eventually.until(timeout: .seconds(30), every: .milliseconds(100)) {
                        (try? await store.checkAvailable()) != nil
                    })
                #expect(seen.reported.withLock { $0.last } == true, "a call answered again told the store's availability")
                #expect(try await store.order(id: "in-the-black-hole") == nil, "the write refused in the black hole changed nothing")
            }
            await proxy.stop()
        }
    }
}
