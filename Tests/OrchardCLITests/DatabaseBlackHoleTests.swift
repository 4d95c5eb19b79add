import Foundation
import OrchardConfiguration
import OrchardCore
import OrchardIntegrationTesting
import OrchardServerTesting
import OrchardTesting
import Synchronization
import Testing

/// The chaos test of a network that drops instead of refusing: two real `orchard serve`
/// processes reach one private PostgreSQL cluster through the test's own loopback TCP proxy,
/// six shoppers order and pay in a loop, and the proxy turns into a black hole (it stops
/// forwarding in both directions and closes nothing) for a while. Stopping PostgreSQL closes
/// connections cleanly; here nothing answers and nothing is closed, and only the store's own
/// bounds end a call: its per-call deadline on the client, `statement_timeout`,
/// `lock_timeout` and `idle_in_transaction_session_timeout` on the server.
///
/// The bound asserted: every answer within 7 s, below the harness's own 8 s give-up (an answer
/// that never came counts as status 0 and fails too). Each store call ends within the acquire
/// timeout (1 s) plus the call timeout (2 s) set below; a request's first call into the fault
/// ends it, and room is left for a call or two just before it and for a loaded 2-core machine.
/// Before, a call on a connection in the black hole waited until the network came back.
///
/// The fault lasts 20 s; `ORCHARD_BLACKHOLE_SECONDS` sets another length (`scripts/chaos`).
@Suite(
    "A network to the database that drops packets: two instances through a black-holed proxy", .serialized,
    .enabled(if: PostgresServer.enabled))
struct DatabaseBlackHoleTests {
    static var fault: Duration {
        .seconds(Int(ProcessInfo.processInfo.environment["ORCHARD_BLACKHOLE_SECONDS"] ?? "").map { max(5, min($0, 300)) } ?? 20)
    }
    static let bound: Duration = .seconds(7)

    /// Locks held in `database` by any backend but the asking one's.
    static func locks(_ postgres: PostgresServer, _ database: String) async throws -> String {
        try await postgres.query(
            database,
            """
            SELECT coalesce(string_agg(l.locktype || ' ' || l.mode || ' (' || coalesce(a.state, '?') || ')', ', '), '')
            FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
            WHERE a.datname = current_database() AND l.pid <> pg_backend_pid()
            """)
    }

    @Test("black hole under load: bounded answers, /health 503 throughout, no lock left, every charge one authorized payment")
    func blackHoleUnderLoad() async throws {
        let postgres = try await PostgresServer.dedicated(settings: [:])
        defer { postgres.stop() }
        let database = try await postgres.createDatabase()
        let proxy = try await BlackHoleProxy(upstreamPort: postgres.port)
        let mock = try await CrashTests.mock()
        let environment = ["PGPASS": postgres.password, "VAULT_KEY": String(repeating: "7e", count: 32)]
        let settings = ConfigurationFile.Postgres(
            host: "127.0.0.1", port: proxy.port, database: database.database, user: PostgresServer.user, password: "env:PGPASS",
            connectTimeoutMilliseconds: 1000, acquireTimeoutMilliseconds: 1000, statementTimeoutMilliseconds: 1500,
            lockTimeoutMilliseconds: 1000, idleInTransactionTimeoutMilliseconds: 2000, callTimeoutMilliseconds: 2000)
        let (a, b, journal, shoppers) = try await DatabaseFaultLoad.trading(mock: mock, environment: environment, settings)

        await proxy.blackHole()
        let dropped = ContinuousClock.now
        let notReady = try await Eventually.value(timeout: Self.fault, every: .milliseconds(100)) { () async -> Duration? in
            let down = [await DatabaseFaultLoad.ready(a), await DatabaseFaultLoad.ready(b)].allSatisfy { !$0 }
            return down ? .now - dropped : nil
        }
        // Once both said 503, they keep saying it until the fault ends: nothing answers through it.
        var readyDuring = 0
        if notReady != nil {
            while ContinuousClock.now < dropped + Self.fault {
                for server in [a, b] where await DatabaseFaultLoad.ready(server) { readyDuring += 1 }
                try await Task.sleep(for: .milliseconds(200))  // the polling rate, not a wait for an event
            }
        }
        // The server's side: whatever an instance's transactions locked was freed by its timeouts.
        let locksDuring = try await Self.locks(postgres, database.database)
        await proxy.restore()
        let restored = ContinuousClock.now
        let (readyAgain, orders) = try await DatabaseFaultLoad.recover(a, b, journal: journal, shoppers: shoppers, since: restored)
        await proxy.stop()
        let locksAfter = try await Self.locks(postgres, database.database)

        let during = journal.answers(from: dropped, to: restored)
        let longest = during.map(\.elapsed).max() ?? .zero
        #expect(!during.isEmpty, "the shoppers kept asking during the fault")
        let slow = during.filter { $0.elapsed >= .seconds(3) || $0.status == 0 }.map {
            "\($0.path) \($0.status) after \($0.elapsed), begun \($0.started - dropped) into the fault"
        }
        #expect(longest < Self.bound, "an answer took \(longest) while the network dropped packets: \(slow)")
        #expect(during.allSatisfy { [200, 201, 503, 504].contains($0.status) }, "\(Set(during.map(\.status))): \(slow)")
        #expect(notReady != nil, "/health said ready on both instances throughout the fault")
        #expect(readyDuring == 0, "/health said ready \(readyDuring) times during the fault after saying 503")
        #expect(locksDuring.isEmpty, "locks held at the end of the fault: \(locksDuring)")
        #expect(locksAfter.isEmpty, "locks held after the instances stopped: \(locksAfter)")
        #expect(readyAgain != nil, "the instances did not serve again after the network came back")

        let (charges, unmatched) = try await DatabaseFaultLoad.checkCharges(orders: orders, mock: mock, database: database)
        let statuses = Dictionary(grouping: during, by: \.status).mapValues(\.count)
        print(
            """
            database black hole of \(Self.fault): \(during.count) answers during it, the longest \(longest), \
            statuses \(statuses.sorted { $0.key < $1.key }); /health 503 on both after \(notReady ?? .zero); \
            locks at its end [\(locksDuring)]; ready again \(readyAgain ?? .zero) after; \(charges.count) charges, \
            \(orders.count) orders, every charge one authorized payment: \(unmatched.isEmpty)
            """)
        await mock.stop()
    }
}
