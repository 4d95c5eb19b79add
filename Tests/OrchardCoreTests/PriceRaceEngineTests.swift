import ApplePay
import Foundation
import OrchardCore
import OrchardTesting
import Synchronization
import Testing

/// The race the price version closes: the shopper's authorize has checked the token against the
/// order's total, and a shipping change reprices the order before the payment is claimed.
@Suite("Payments engine: a repricing between the token check and the claim")
struct PriceRaceEngineTests {
    @Test("the repricing wins: order_changed, nothing sent, the token unused, the order at its new price")
    func repricedBeforeClaim() async throws {
        try await PaymentsEngineTests.withBench { bench in
            let order = try await bench.order()
            let token = try bench.token(for: order)
            let dearer = order.repriced(
                try Pricing.price(items: [CartItem(productId: "apple", quantity: 3)], catalogue: EngineBench.catalogue, at: bench.clock.now)
            )
            bench.payments.beforeClaim.withLock { [store = bench.store] in $0 = { try await store.updateOpen(dearer) } }
            let attempt = PaymentsEngine.Attempt(merchantIdentifier: EngineBench.merchant, orderId: order.id, token: token)
            let refusal = await #expect(throws: CoreError.self) { _ = try await bench.engine.authorize(attempt) }
            #expect(refusal?.code == .orderChanged)
            let stored = try #require(try await bench.store.order(id: order.id))
            #expect(stored.state == .open && stored.priced.total == dearer.priced.total && stored.priceVersion == 2)
            #expect(try await bench.store.payments(orderId: order.id).isEmpty)
            #expect(bench.processor.requests == 0, "nothing was sent to the processor")

            // Back at the token's price (a third version), the same token pays: it was not used up.
            try await bench.store.updateOpen(stored.repriced(order.priced))
            let paid = try await bench.engine.authorize(attempt)
            #expect(paid.state == .authorized && paid.amount == order.priced.total && paid.reference == "\(order.id)-1")
        }
    }
}
