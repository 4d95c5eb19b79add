import ApplePay
import Foundation
import Logging
import OrchardCore
import OrchardTesting
import Synchronization
import Testing

@testable import OrchardPostgres

/// The engine on PostgreSQL, with another instance on the same database: an order this instance
/// created is paid in two round trips (the claim, the outcome), and one the other instance
/// changed meanwhile is decided again from a read, as if it had been read from the start.
@Suite("Payments engine on PostgreSQL: an order it created is paid in two round trips", .serialized)
struct PostgresEngineTests {
    /// The bench's engine on `store`, beside `other` on the same database.
    static func withBench(_ body: (EngineBench, PostgresStore, PostgresStore) async throws -> Void) async throws {
        try await PostgresRoundTripTests.withTwoInstances { store, other in
            try await body(try EngineBench(opening: { store }), store, other)
        }
    }

    static func authorize(_ bench: EngineBench, _ order: OrderRecord, token: PaymentToken) async -> Result<PaymentRecord, CoreError> {
        do {
            return .success(
                try await bench.engine.authorize(.init(merchantIdentifier: EngineBench.merchant, orderId: order.id, token: token)))
        } catch {
            return .failure(error)
        }
    }

    /// The order at a dearer price, written by `other`; the new total.
    static func repriced(_ order: OrderRecord, by other: PostgresStore, bench: EngineBench) async throws -> OrderRecord {
        let dearer = order.repriced(
            try Pricing.price(items: [CartItem(productId: "apple", quantity: 3)], catalogue: EngineBench.catalogue, at: bench.clock.now))
        try await other.updateOpen(dearer)
        return dearer
    }

    @Test("created here: authorized in two round trips, no read", .enabled(if: PostgresServer.enabled))
    func createdHere() async throws {
        try await Self.withBench { bench, store, _ in
            let order = try await bench.order()
            let token = try bench.token(for: order)
            let before = store.roundTrips.load(ordering: .relaxed)
            let paid = try await Self.authorize(bench, order, token: token).get()
            #expect(paid.state == .authorized && paid.amount == order.priced.total)
            #expect(store.roundTrips.load(ordering: .relaxed) - before == 2, "the claim and the outcome")
            #expect(bench.processor.requests == 1)
        }
    }

    @Test(
        "repriced by another instance before the shopper paid: the new price is paid after one read; the old price's token is refused",
        .enabled(if: PostgresServer.enabled))
    func repricedElsewhere() async throws {
        try await Self.withBench { bench, store, other in
            let order = try await bench.order()
            let dearer = try await Self.repriced(order, by: other, bench: bench)
            let before = store.roundTrips.load(ordering: .relaxed)
            let paid = try await Self.authorize(bench, order, token: try bench.token(for: order, amount: Int(dearer.priced.total))).get()
            #expect(paid.state == .authorized && paid.amount == dearer.priced.total)
            #expect(store.roundTrips.load(ordering: .relaxed) - before == 3, "the read, then the claim and the outcome")

            // A token for the price it had when this instance wrote it: checked against that, it
            // loses the claim to the repricing: order_changed, nothing claimed or sent.
            let second = try await bench.order()
            _ = try await Self.repriced(second, by: other, bench: bench)
            let stale = await Self.authorize(bench, second, token: try bench.token(for: second))
            #expect(throws: CoreError.self) { try stale.get() }
            if case .failure(let error) = stale { #expect(error.code == .orderChanged, "\(error)") }
            #expect(try await store.payments(orderId: second.id).isEmpty && bench.processor.requests == 1)
        }
    }

    @Test(
        "a token that does not pay a remembered order, unchanged since: refused after one read, nothing written or sent, the order still payable",
        .enabled(if: PostgresServer.enabled))
    func refusedUnchanged() async throws {
        try await Self.withBench { bench, store, _ in
            let order = try await bench.order()
            let before = store.roundTrips.load(ordering: .relaxed)
            let refused = await Self.authorize(bench, order, token: try bench.token(for: order, amount: 1))
            if case .failure(let error) = refused { #expect(error.code == .paymentMismatch, "\(error)") } else { Issue.record("paid") }
            #expect(store.roundTrips.load(ordering: .relaxed) - before == 1, "the read that finds it unchanged, nothing written")
            #expect(try await store.payments(orderId: order.id).isEmpty && bench.processor.requests == 0)
            let paid = try await Self.authorize(bench, order, token: try bench.token(for: order)).get()
            #expect(paid.state == .authorized, "the order was left open")
        }
    }

    @Test(
        "paid through another instance meanwhile: refused as not open after one read, nothing sent twice",
        .enabled(if: PostgresServer.enabled))
    func paidElsewhere() async throws {
        try await Self.withBench { bench, store, other in
            let order = try await bench.order()
            let elsewhere = EngineBench.engine(
                repositories: Repositories(other), processor: bench.processor, vault: bench.vault, clock: bench.clock,
                policy: bench.policy)
            let first = try await elsewhere.authorize(
                .init(merchantIdentifier: EngineBench.merchant, orderId: order.id, token: try bench.token(for: order)))
            #expect(first.state == .authorized)
            let again = await Self.authorize(bench, order, token: try bench.token(for: order))
            if case .failure(let error) = again { #expect(error.code == .orderNotOpen, "\(error)") } else { Issue.record("paid twice") }
            #expect(try await store.payments(orderId: order.id).count == 1 && bench.processor.requests == 1)
        }
    }
}
