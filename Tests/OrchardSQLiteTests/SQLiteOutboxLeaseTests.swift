import Foundation
import OrchardCore
import OrchardTesting
import Synchronization
import Testing

@testable import OrchardSQLite

/// The webhook lease runs on the writer thread every payment's commit waits for, once a poll:
/// what it reads must not grow with the backlog. Counted in SQLite's virtual-machine steps, so
/// the test says nothing about timings.
@Suite("SQLite outbox lease")
struct SQLiteOutboxLeaseTests {
    /// Adds `count` pending events for `merchant`, due from `from` seconds on.
    static func backlog(_ store: SQLiteStore, merchant: String, count: Int, from: Int) async throws {
        try await store.database.run { db in
            for index in 0..<count {
                let at = Date(timeIntervalSince1970: TimeInterval(from + index))
                try db.execute(
                    """
                    INSERT INTO webhook_events (id, merchant, type, payload, created_at, state, attempts, next_attempt_at)
                    VALUES (\("evt_\(merchant)_\(from + index)"), \(merchant), 'payment.authorized', \(Array("{}".utf8)), \(at),
                    'pending', 0, \(at))
                    """)
            }
        }
    }

    /// Steps one lease of `lease` takes at `seconds`, and the events it leased.
    static func lease(_ store: SQLiteStore, _ lease: WebhookLease, at seconds: Int) async throws -> (steps: Int, ids: [String]) {
        let before = store.database.steps.load(ordering: .relaxed)
        let at = Date(timeIntervalSince1970: TimeInterval(seconds))
        let leased = try await store.leaseWebhookEvents(at: at, until: at.addingTimeInterval(60), fairly: lease)
        return (store.database.steps.load(ordering: .relaxed) - before, leased.map(\.id))
    }

    @Test("a lease reads about as much with 5,000 events waiting as with 50")
    func leaseIgnoresBacklog() async throws {
        let directory = try TemporaryDirectory()
        let small = try SQLiteStore(path: directory.path("small.sqlite"))
        let large = try SQLiteStore(path: directory.path("large.sqlite"))
        for store in [small, large] {
            try await Self.backlog(store, merchant: "merchant.b", count: 10, from: 1_000_000)
            try await Self.backlog(store, merchant: "merchant.c", count: 10, from: 1_000_000)
        }
        try await Self.backlog(small, merchant: "merchant.a", count: 50, from: 0)
        try await Self.backlog(large, merchant: "merchant.a", count: 5_000, from: 0)
        let fair = WebhookLease(merchants: 64, perMerchant: 10)
        let few = try await Self.lease(small, fair, at: 2_000_000)
        let many = try await Self.lease(large, fair, at: 2_000_000)
        // Each merchant's ten oldest, either way.
        #expect(few.ids.count == 30 && many.ids.count == 30)
        #expect(few.ids.prefix(10) == many.ids.prefix(10))
        #expect(
            many.steps < 2 * few.steps,
            "a lease over 5,000 waiting events took \(many.steps) steps, over 50 \(few.steps): it reads the backlog")
    }
}
