import Foundation
import Logging
import OrchardCore
import OrchardPostgres
import OrchardTesting
import PostgresNIO
import Testing

/// A claim reads without a lock and writes in one statement. These races are staged with another
/// connection's transaction holding the order's row while the claim reads and then waits to write.
@Suite("PostgreSQL store: a claim whose order changes between its read and its write")
struct PostgresClaimRaceTests {
    static let logger = Logger(label: "orchard.test")

    static func connect(_ settings: PostgresSettings, _ server: PostgresServer, id: Int) async throws -> PostgresConnection {
        try await PostgresConnection.connect(
            on: PostgresServer.storeLoops.any(),
            configuration: .init(
                host: "127.0.0.1", port: server.port, username: PostgresServer.user, password: server.password,
                database: settings.database, tls: .disable),
            id: id, logger: logger)
    }

    /// Waits until a backend of this database waits for a lock (the claim's write), or fails after 30 s.
    static func untilSomeoneWaits(on watcher: PostgresConnection) async throws {
        let deadline = ContinuousClock.now + .seconds(30)
        while ContinuousClock.now < deadline {
            _ = try await watcher.query("SELECT pg_stat_clear_snapshot()", logger: logger).collect()
            let rows = try await watcher.query(
                "SELECT count(*)::bigint FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'",
                logger: logger
            ).collect()
            if let row = rows.first, try row.decode(Int64.self) > 0 { return }
            try await Task.sleep(for: .milliseconds(10))
        }
        Issue.record("the claim never waited for the order's row")
    }

    @Test(
        "an attempt committed while the claim waits to write: the claim reads again and takes the next reference",
        .enabled(if: PostgresServer.enabled))
    func attemptCommittedMeanwhile() async throws {
        let server = try await PostgresServer.shared()
        try await server.withDatabase { settings in
            let opened = try await PostgresStore.open(settings, logger: Self.logger, eventLoops: PostgresServer.storeLoops)
            try await opened.withRunning { store in
                try await store.insert(try StoreContractTests.order("o1"))
                let other = try await Self.connect(settings, server, id: 1)
                let watcher = try await Self.connect(settings, server, id: 2)
                // Another instance's claim and its refusal, in one transaction for the staging: the
                // order ends open at the same price, with one more attempt than the claim reads.
                _ = try await other.query("BEGIN", logger: Self.logger).collect()
                _ = try await other.query("UPDATE orders SET state = 'pending' WHERE id = 'o1'", logger: Self.logger).collect()
                _ = try await other.query(
                    """
                    INSERT INTO payments (id, order_id, transaction_id, state, amount, currency, last_four, created_at, processor,
                    reference, links, updated_at, sends, reconcile_attempts)
                    VALUES ('px', 'o1', 'tx-other', 'refused', 990, 'EUR', '1111', now(), 'record', 'o1-1', '{}', now(), 1, 0)
                    """, logger: Self.logger
                ).collect()
                _ = try await other.query("UPDATE orders SET state = 'open' WHERE id = 'o1'", logger: Self.logger).collect()
                let claim = Task { try await store.claimPayment(StoreContractTests.claim("o1", transaction: "t1", payment: "p1")) }
                try await Self.untilSomeoneWaits(on: watcher)
                _ = try await other.query("COMMIT", logger: Self.logger).collect()
                let claimed = try await claim.value
                #expect(claimed.reference == "o1-2", "the next reference, never the other attempt's")
                let references = try await store.payments(orderId: "o1").map(\.reference)
                #expect(references.sorted() == ["o1-1", "o1-2"])
                try await other.close()
                try await watcher.close()
            }
        }
    }

    @Test(
        "a repricing committed while the claim waits to write: orderChanged, and the token stays unused",
        .enabled(if: PostgresServer.enabled))
    func repricedMeanwhile() async throws {
        let server = try await PostgresServer.shared()
        try await server.withDatabase { settings in
            let opened = try await PostgresStore.open(settings, logger: Self.logger, eventLoops: PostgresServer.storeLoops)
            try await opened.withRunning { store in
                try await store.insert(try StoreContractTests.order("o1"))
                let other = try await Self.connect(settings, server, id: 1)
                let watcher = try await Self.connect(settings, server, id: 2)
                _ = try await other.query("BEGIN", logger: Self.logger).collect()
                _ = try await other.query("UPDATE orders SET price_version = 2 WHERE id = 'o1'", logger: Self.logger).collect()
                let claim = Task {
                    await StoreContractTests.storeError {
                        _ = try await store.claimPayment(StoreContractTests.claim("o1", transaction: "t1", payment: "p1"))
                    }
                }
                try await Self.untilSomeoneWaits(on: watcher)
                _ = try await other.query("COMMIT", logger: Self.logger).collect()
                #expect(await claim.value == .orderChanged)
                #expect(try await store.payments(orderId: "o1").isEmpty)
                try await store.insert(try StoreContractTests.order("o2"))
                #expect(try await store.claimPayment(StoreContractTests.claim("o2", transaction: "t1", payment: "p2")).reference == "o2-1")
                try await other.close()
                try await watcher.close()
            }
        }
    }
}
