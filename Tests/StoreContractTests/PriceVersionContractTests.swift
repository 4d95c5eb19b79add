import ApplePay
import Foundation
import OrchardCore
import OrchardTesting
import Testing

/// The price is part of the claim: a payment is claimed for the price version its token was
/// checked against, and a repricing in between wins (the claim fails with `orderChanged` and
/// leaves the token unused). Run against SQLite, the in-memory store and PostgreSQL alike.
@Suite("Store contract: the price version is part of the claim")
struct PriceVersionContractTests {
    typealias Kind = StoreContractTests.Kind
    typealias Shop = ShopStoreContractTests

    /// The order with one more apple: a dearer price at the next version.
    static func dearer(_ order: OrderRecord) throws -> OrderRecord {
        order.repriced(
            try Pricing.price(items: [CartItem(productId: "apple", quantity: 3)], catalogue: TestRecords.catalogue, at: Shop.at(0)))
    }

    static func claim(_ order: String, payment: String, transaction: String, version: Int) -> PaymentClaim {
        var claim = StoreContractTests.claim(order, transaction: transaction, payment: payment)
        claim.priceVersion = version
        return claim
    }

    @Test("a claim for the price before a repricing loses, and its token stays unused", arguments: Kind.enabled)
    func repricedFirst(kind: Kind) async throws {
        try await StoreContractTests.withStore(kind) { store in
            let order = try StoreContractTests.order("o1")
            try await store.insert(order)
            #expect(try await store.order(id: "o1")?.priceVersion == 1)
            let repriced = try Self.dearer(order)
            try await store.updateOpen(repriced)
            let stored = try #require(try await store.order(id: "o1"))
            #expect(stored.priceVersion == 2 && stored.priced == repriced.priced && stored.state == .open)

            let stale = Self.claim("o1", payment: "p1", transaction: "t1", version: 1)
            #expect(await Shop.storeError { _ = try await store.claimPayment(stale) } == .orderChanged)
            #expect(try await store.payments(orderId: "o1").isEmpty)
            #expect(try await store.order(id: "o1")?.state == .open)
            // The token's transaction ID was not used up: a claim at the current version takes it.
            let current = try await store.claimPayment(Self.claim("o1", payment: "p1", transaction: "t1", version: 2))
            #expect(current.reference == "o1-1" && current.state == .pending)
        }
    }

    @Test("a repricing from a version already passed, or of an order no longer open, changes nothing", arguments: Kind.enabled)
    func staleRepricing(kind: Kind) async throws {
        try await StoreContractTests.withStore(kind) { store in
            let order = try StoreContractTests.order("o1")
            try await store.insert(order)
            let first = try Self.dearer(order)
            try await store.updateOpen(first)
            // Another update read version 1 too: it must not overwrite version 2's price.
            var rival = order.repriced(order.priced)
            rival.priced.couponCode = "RIVAL"
            #expect(await Shop.storeError { try await store.updateOpen(rival) } == .orderChanged)
            #expect(try await store.order(id: "o1")?.priced == first.priced)
            #expect(await Shop.storeError { try await store.updateOpen(order) } == .orderChanged, "version 1 again")

            _ = try await store.claimPayment(Self.claim("o1", payment: "p1", transaction: "t1", version: 2))
            #expect(await Shop.storeError { try await store.updateOpen(first.repriced(order.priced)) } == .orderNotOpen)
            #expect(
                await Shop.storeError { try await store.updateOpen(try Self.dearer(StoreContractTests.order("none"))) } == .orderNotOpen)
        }
    }

    @Test(
        "an authorization and a repricing sent together: exactly one wins, and a payment is always for the order's price",
        arguments: Kind.enabled)
    func race(kind: Kind) async throws {
        try await StoreContractTests.withStore(kind) { store in
            let orders = try (0..<40).map { try StoreContractTests.order("o\($0)") }
            for order in orders { try await store.insert(order) }
            try await StoreConcurrencyContractTests.warm(store)
            enum Outcome: Sendable, Equatable {
                case won
                case lost(CoreError.Code?)
            }
            let results = try await StoreConcurrencyContractTests.concurrently(orders.count * 2) { index -> (Int, Bool, Outcome) in
                let order = orders[index / 2]
                do {
                    if index % 2 == 0 {
                        _ = try await store.claimPayment(Self.claim(order.id, payment: "p\(index)", transaction: "t\(index)", version: 1))
                    } else {
                        try await store.updateOpen(try Self.dearer(order))
                    }
                    return (index / 2, index % 2 == 0, .won)
                } catch let error as CoreError {
                    return (index / 2, index % 2 == 0, .lost(error.code))
                }
            }
            for (position, order) in orders.enumerated() {
                let claim = try #require(results.first { $0.0 == position && $0.1 }?.2)
                let update = try #require(results.first { $0.0 == position && !$0.1 }?.2)
                let stored = try #require(try await store.order(id: order.id))
                let payments = try await store.payments(orderId: order.id)
                switch (claim, update) {
                case (.won, .lost(.orderNotOpen)):
                    #expect(stored.state == .pending && stored.priceVersion == 1 && payments.map(\.amount) == [stored.priced.total])
                case (.lost(.orderChanged), .won):
                    #expect(stored.state == .open && stored.priceVersion == 2 && payments.isEmpty)
                default:
                    Issue.record("order \(order.id): claim \(claim), repricing \(update): both or neither won")
                }
            }
        }
    }
}
