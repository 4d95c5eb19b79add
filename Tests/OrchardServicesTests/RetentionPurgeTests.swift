import ApplePay
import Foundation
import OrchardCore
import OrchardInMemory
import OrchardTesting
import Testing

@testable import OrchardServices

/// The retention purge driven directly, on the in-memory store and a clock the test moves.
@Suite("RetentionPurge: old finished rows go, in batches until none is left; payments and recent rows stay")
struct RetentionPurgeTests {
    static let merchant = "merchant.purge"
    static let day: TimeInterval = 86_400

    let store = InMemoryStore()
    let clock = ManualClock()

    func purge(_ policy: RetentionPolicy = RetentionPolicy()) -> RetentionPurge {
        RetentionPurge(store: store, policy: policy, time: clock.source, logger: LoopFixtures.quiet)
    }

    /// An order that expired `age` seconds ago.
    func expiredOrder(_ id: String, age: TimeInterval) async throws {
        var order = try TestRecords.order(id)
        order.state = .expired
        order.expiresAt = clock.now.addingTimeInterval(-age)
        try await store.insert(order)
    }

    /// An order whose one payment was declined, that then expired `age` seconds ago.
    func refusedThenExpired(_ id: String, age: TimeInterval) async throws {
        var order = try TestRecords.order(id)
        order.expiresAt = clock.now.addingTimeInterval(-age)
        try await store.insert(order)
        var claim = TestRecords.claim(id, transaction: "t-\(id)", payment: "p-\(id)")
        claim.draft.createdAt = clock.now.addingTimeInterval(-age - 60)
        _ = try await store.claimPayment(claim)
        _ = try await store.transition(
            PaymentTransition(
                paymentId: "p-\(id)", orderId: id, move: PaymentLifecycle.move(.declined), at: clock.now.addingTimeInterval(-age - 30)))
        _ = try await store.expireOrders(at: clock.now.addingTimeInterval(-age), limit: 10)
        try #require(try await store.order(id: id)?.state == .expired, "an expired order with a payment")
    }

    /// `count` webhook events delivered `age` seconds ago.
    func deliveredEvents(_ prefix: String, _ count: Int, age: TimeInterval) async throws {
        for index in 0..<count {
            try await TestRecords.authorizedPayment(in: store, order: "\(prefix)-\(index)", merchant: Self.merchant, at: clock.now)
        }
        for event in try await store.webhookEvents(merchantIdentifier: Self.merchant, state: .pending, limit: count + 1) {
            _ = try await store.recordDelivery(
                WebhookDeliveryResult(
                    eventId: event.id, attempt: 0, state: .delivered, status: 200, error: nil, at: clock.now.addingTimeInterval(-age),
                    nextAttemptAt: nil))
        }
    }

    func delivered() async throws -> Int {
        try await store.webhookEvents(merchantIdentifier: Self.merchant, state: .delivered, limit: 10_000).count
    }

    @Test("expired unpaid orders and delivered events past their retention go; younger ones and paid orders stay")
    func purgesOld() async throws {
        try await expiredOrder("old", age: 31 * Self.day)
        try await expiredOrder("young", age: 29 * Self.day)
        try await refusedThenExpired("paid", age: 31 * Self.day)
        try await deliveredEvents("old", 3, age: 31 * Self.day)

        let counts = await purge().purgeOnce()
        #expect(counts.orders == 1 && counts.webhookEvents == 3)
        #expect(try await store.order(id: "old") == nil)
        #expect(try await store.order(id: "young") != nil)
        #expect(try await store.order(id: "paid") != nil, "an order with a payment is kept")
        #expect(try await delivered() == 0)
        #expect(try await store.payment(id: "p-paid") != nil, "payments are never deleted")
    }

    @Test("the retention is measured on the injected clock: the same rows go once the clock has moved")
    func injectedClock() async throws {
        try await deliveredEvents("e", 2, age: 10 * Self.day)
        #expect(await purge().purgeOnce() == PurgeCounts())
        clock.advance(21 * Self.day)
        #expect(await purge().purgeOnce().webhookEvents == 2)
    }

    @Test("more than one batch is purged in one pass: batch after batch until one comes back short")
    func batches() async throws {
        try await deliveredEvents("many", RetentionPurge.batch * 2 + 7, age: 40 * Self.day)
        let counts = await purge().purgeOnce()
        #expect(counts.webhookEvents == RetentionPurge.batch * 2 + 7)
        #expect(try await delivered() == 0)
    }

    @Test("with every retention off, nothing is purged however old")
    func allOff() async throws {
        try await deliveredEvents("kept", 2, age: 400 * Self.day)
        try await expiredOrder("kept-order", age: 400 * Self.day)
        var policy = RetentionPolicy()
        policy.expiredOrders = nil
        policy.deliveredWebhooks = nil
        policy.failedWebhooks = nil
        policy.finishedTokenEvents = nil
        #expect(await purge(policy).purgeOnce() == PurgeCounts())
        #expect(try await delivered() == 2)
        #expect(try await store.order(id: "kept-order") != nil)
    }
}
