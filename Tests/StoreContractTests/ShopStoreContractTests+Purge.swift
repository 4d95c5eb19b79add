import Foundation
import OrchardCore
import Testing

/// Retention's contract: what `purge` deletes, and everything it must never touch.
extension ShopStoreContractTests {
    @Test("a checkout order (no payment request) expires without an event", arguments: Kind.allCases)
    func checkoutOrderExpiresQuietly(kind: Kind) async throws {
        try await StoreContractTests.withStore(kind) { store in
            var order = try StoreContractTests.order("checkout")
            order.expiresAt = Self.at(60)
            try await store.insert(order)
            let before = try await Self.events(store).count
            #expect(try await store.expireOrders(at: Self.at(60), limit: 10) == ["checkout"])
            #expect(try await store.order(id: "checkout")?.state == .expired)
            #expect(try await Self.events(store).count == before, "no payment_request.expired for an order that is not one")
        }
    }

    @Test(
        "purge deletes expired orders without payments and finished events past their cutoffs, never payments or their orders",
        arguments: Kind.allCases)
    func purge(kind: Kind) async throws {
        try await StoreContractTests.withStore(kind) { store in
            for (id, expiresIn) in [("old", 60), ("old2", 60), ("recent", 5000), ("declined", 60)] {
                let (request, order) = try Self.request(id, key: "k-\(id)", expiresIn: expiresIn)
                _ = try await store.createPaymentRequest(request, order: order)
            }
            _ = try await store.claimPayment(Self.claim("declined", payment: "p-declined"))
            try #require(try await Self.move(store, "p-declined", of: "declined", .declined, at: 1) != nil)
            let settled = try await Self.settled(store, order: "kept", payment: "p-kept")
            #expect(Set(try await store.expireOrders(at: Self.at(6000), limit: 100)) == ["old", "old2", "recent", "declined"])

            // Events: the decline's and the settled payment's delivered at 100, the expiries' failed.
            let events = try await Self.events(store)
            for event in events {
                let delivered = event.type != .paymentRequestExpired
                #expect(try await store.recordDelivery(Self.result(event, delivered ? .delivered : .failed, status: 500, at: 100)))
            }
            let pending = try await Self.authorizedEvent(store, "pending-event", at: 7000)

            // Nothing is old enough yet: nothing goes.
            let none = try await store.purge(before: PurgeCutoffs(expiredOrders: Self.at(60), deliveredWebhooks: Self.at(100)), limit: 10)
            #expect(none == PurgeCounts())
            // Orders only, one at a time: old and old2 (expired at 60), then nothing more.
            let cutoffs = PurgeCutoffs(expiredOrders: Self.at(61))
            let first = try await store.purge(before: cutoffs, limit: 1)
            let second = try await store.purge(before: cutoffs, limit: 10)
            #expect(first.orders == 1 && second.orders == 1 && first.webhookEvents == 0 && second.webhookEvents == 0)
            #expect(try await store.purge(before: cutoffs, limit: 10) == PurgeCounts())
            for id in ["old", "old2"] {
                #expect(try await store.order(id: id) == nil, "\(id) is gone")
                #expect(try await store.paymentRequest(id: id) == nil, "and its payment request")
            }
            #expect(try await store.order(id: "recent")?.state == .expired, "expired after the cutoff: kept")
            #expect(try await store.order(id: "declined")?.state == .expired, "it had a payment: kept")
            #expect(try await store.paymentRequest(id: "declined") != nil)

            // Everything past every cutoff: still no payment, no order with one, no pending event.
            let all = try await store.purge(
                before: PurgeCutoffs(expiredOrders: Self.at(100_000), deliveredWebhooks: Self.at(101), failedWebhooks: Self.at(100_000)),
                limit: 100)
            #expect(all.orders == 1, "only recent was left to go")
            #expect(all.webhookEvents == events.count)
            #expect(try await Self.events(store).map(\.id) == [pending.id])
            #expect(try await store.payment(id: "p-declined")?.state == .refused)
            #expect(try await store.payment(id: "p-kept") == settled)
            #expect(try await store.order(id: "kept")?.state == .paid)
            #expect(try await store.order(id: "declined") != nil)
        }
    }
}
