import Foundation
import Logging
import NIOCore
import NIOPosix
import OrchardCore
import OrchardPostgres
import OrchardTesting
import PostgresNIO
import Testing

/// Leases as two instances meet them: what another instance's open transaction holds is passed
/// by at once, neither waited for nor handed out twice.
@Suite("PostgreSQL store: leases skip rows another transaction holds")
struct PostgresLeaseLockTests {
    /// Runs `body` while another connection holds `FOR UPDATE` locks on the rows `lock` selects,
    /// then lets them go. `body` waiting for those rows (no SKIP LOCKED) is a failure, not a hang.
    static func whileLocked<T: Sendable>(
        _ settings: PostgresSettings, port: Int, password: String, _ lock: PostgresQuery,
        _ body: @escaping @Sendable () async throws -> T
    ) async throws -> T? {
        let connection = try await PostgresConnection.connect(
            on: PostgresServer.storeLoops.any(),
            configuration: .init(
                host: "127.0.0.1", port: port, username: PostgresServer.user, password: password, database: settings.database,
                tls: .disable),
            id: 1, logger: Logger(label: "orchard.test"))
        let logger = Logger(label: "orchard.test")
        try await connection.query("BEGIN", logger: logger)
        let locked = try await connection.query(lock, logger: logger).collect()
        #expect(locked.count == 1, "one row held")
        let result = try await withThrowingTaskGroup(of: T?.self) { group in
            group.addTask { try await body() }
            group.addTask {
                // Waiting this long means waiting for the lock: let go of it, so the call ends.
                try? await Task.sleep(for: .seconds(30))
                _ = try? await connection.query("ROLLBACK", logger: logger)
                return nil
            }
            let first = try await group.next() ?? nil
            group.cancelAll()
            return first
        }
        _ = try? await connection.query("ROLLBACK", logger: logger)
        try await connection.close()
        #expect(result != nil, "the call waited for the held row instead of passing it by")
        return result
    }

    @Test(
        "webhook events, payments, refunds and expiring orders held by another transaction are passed by",
        .enabled(if: PostgresServer.enabled))
    func skipLocked() async throws {
        let server = try await PostgresServer.shared()
        try await server.withDatabase(poolSize: 4) { settings in
            let opened = try await PostgresStore.open(
                settings, logger: Logger(label: "orchard.test"), eventLoops: PostgresServer.storeLoops)
            try await opened.withRunning { store in try await Self.passesLockedRowsBy(store, settings: settings, server: server) }
        }
    }

    /// Each lease, with one of its rows held by another connection's transaction.
    static func passesLockedRowsBy(_ store: PostgresStore, settings: PostgresSettings, server: PostgresServer) async throws {
        let shop = ShopStoreContractTests.self
        let events = try await StoreConcurrencyContractTests.authorizedEvents(store, count: 3)
        let held = try #require(events.first)
        let leased = try await Self.whileLocked(
            settings, port: server.port, password: server.password, "SELECT id FROM webhook_events WHERE id = \(held) FOR UPDATE"
        ) { try await store.leaseWebhookEvents(at: shop.at(100), until: shop.at(160), limit: 10).map(\.id) }
        #expect(leased?.sorted() == Array(events.dropFirst()).sorted())
        #expect(
            try await store.leaseWebhookEvents(at: shop.at(100), until: shop.at(160), limit: 10).map(\.id) == [held], "let go: leased")

        for index in 0..<2 {
            try await store.insert(try StoreContractTests.order("u\(index)"))
            _ = try await store.claimPayment(shop.claim("u\(index)", payment: "unknown\(index)"))
            let unknown = try await store.transition(
                PaymentTransition(
                    paymentId: "unknown\(index)", orderId: "u\(index)", move: PaymentLifecycle.move(.noAnswer), at: shop.at(10),
                    nextReconcileAt: shop.at(20)))
            #expect(unknown?.state == .unknown)
        }
        let payments = try await Self.whileLocked(
            settings, port: server.port, password: server.password, "SELECT id FROM payments WHERE id = 'unknown0' FOR UPDATE"
        ) { try await store.leasePaymentsForReconciliation(at: shop.at(100), until: shop.at(160), limit: 10).map(\.id) }
        #expect(payments == ["unknown1"])

        _ = try await shop.settled(store, order: "s", payment: "settled")
        var refunds: [String] = []
        for index in 0..<2 {
            let refund = try await store.claimRefund(shop.refund("settled", 10, key: "k\(index)", at: index))
            _ = try await store.finishRefund(id: refund.id, state: .unknown, outcome: nil, at: shop.at(index))
            refunds.append(refund.id)
        }
        let reconciled = try await Self.whileLocked(
            settings, port: server.port, password: server.password, "SELECT id FROM refunds WHERE id = \(refunds[0]) FOR UPDATE"
        ) {
            try await store.leaseRefundsToReconcile(
                at: shop.at(100), until: shop.at(160), pendingBefore: shop.at(70), maximumSends: 8, limit: 10
            ).map(\.id)
        }
        #expect(reconciled == [refunds[1]])

        for index in 0..<2 {
            let (request, order) = try shop.request("r\(index)", key: "k\(index)", expiresIn: 10)
            _ = try await store.createPaymentRequest(request, order: order)
        }
        let expired = try await Self.whileLocked(
            settings, port: server.port, password: server.password, "SELECT id FROM orders WHERE id = 'r0' FOR UPDATE"
        ) { try await store.expireOrders(at: shop.at(100), limit: 10) }
        #expect(expired == ["r1"], "an order being claimed right now is left for the next pass")
        #expect(try await store.expireOrders(at: shop.at(100), limit: 10) == ["r0"])
    }
}
