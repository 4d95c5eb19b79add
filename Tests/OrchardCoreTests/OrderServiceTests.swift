import ApplePay
import Foundation
import OrchardCore
import OrchardInMemory
import OrchardTesting
import Testing

/// ``OrderService`` in memory: catalogue orders opened and repriced, the shop's payment
/// requests repriced from its cart or its quote URL, and every refusal typed.
@Suite("OrderService: orders opened and repriced, in memory")
struct OrderServiceTests {
    let store = InMemoryStore()
    let clock = TestClock()

    func service(quotes: QuoteClient? = nil) -> OrderService {
        OrderService(orders: store, paymentRequests: store, quotes: quotes, time: clock.source, openFor: 3600)
    }

    func refusal(_ body: () async throws -> Void) async -> CoreError? { await ServiceFixtures.refusal(body) }

    @Test("an order is priced from the catalogue, stored open at version 1 and bound to its tokens")
    func create() async throws {
        let merchant = try ServiceFixtures.merchant()
        let created = try await service().create(items: [CartItem(productId: "apple-box", quantity: 2)], merchant: merchant)
        let stored = try #require(try await store.order(id: created.order.id))
        #expect(stored == created.order)
        #expect(stored.state == .open && stored.priceVersion == 1 && stored.expiresAt == ServiceFixtures.start.addingTimeInterval(3600))
        // 2 × 12.90 and the first method that ships (standard, 4.90).
        #expect(stored.priced.total == 3_070 && stored.priced.shippingMethod?.identifier == "standard")
        #expect(created.paymentRequest.applicationData == Data(OrderRecord.binding(orderId: stored.id)).base64EncodedString())
        #expect(created.paymentRequest.total.amount == "30.70")
    }

    @Test("a cart the catalogue does not price, and a shop without a catalogue, are refused and store nothing")
    func createRefused() async throws {
        let unknown = await refusal {
            _ = try await service().create(items: [CartItem(productId: "plums", quantity: 1)], merchant: try ServiceFixtures.merchant())
        }
        #expect(unknown?.code == .invalidCart)
        let none = await refusal {
            _ = try await service().create(
                items: [CartItem(productId: "apple-box", quantity: 1)], merchant: try ServiceFixtures.merchant(catalogue: nil))
        }
        #expect(none?.code == .ordersUnavailable)
        #expect(try await store.payments(state: nil, limit: 10).isEmpty)
    }

    @Test("a sheet event reprices the order as a compare-and-set: the next price version, the new total")
    func reprice() async throws {
        let merchant = try ServiceFixtures.merchant()
        let order = try await service().create(items: [CartItem(productId: "apple-box", quantity: 1)], merchant: merchant).order
        let update = try await service().update(orderId: order.id, merchant: merchant, event: .shippingMethod("express"))
        #expect(update.errors.isEmpty && update.newShippingMethods == nil && update.newTotal.amount == "22.80")
        var stored = try #require(try await store.order(id: order.id))
        #expect(stored.priceVersion == 2 && stored.priced.total == 2_280)

        let coupon = try await service().update(orderId: order.id, merchant: merchant, event: .coupon("HARVEST10"))
        #expect(coupon.errors.isEmpty)
        stored = try #require(try await store.order(id: order.id))
        #expect(
            stored.priceVersion == 3 && stored.priced.couponCode == "HARVEST10" && stored.priced.shippingMethod?.identifier == "express")

        // A new address picks the method afresh (express does not ship to Germany) and lists the methods.
        let moved = try await service().update(
            orderId: order.id, merchant: merchant,
            event: .shippingContact(countryCode: "DE", postalCode: "10115", locality: "Berlin", administrativeArea: nil))
        #expect(moved.newShippingMethods?.map(\.identifier) == ["standard"])
        stored = try #require(try await store.order(id: order.id))
        #expect(stored.priceVersion == 4 && stored.priced.shippingCountry == "DE" && stored.priced.shippingMethod?.identifier == "standard")

        // Nothing changes: no new version.
        _ = try await service().update(orderId: order.id, merchant: merchant, event: .paymentMethod)
        #expect(try await store.order(id: order.id)?.priceVersion == 4)
    }

    @Test("what the shopper can fix comes back as Apple Pay errors: a bad coupon dropped, an address nothing ships to kept out")
    func shopperErrors() async throws {
        let merchant = try ServiceFixtures.merchant()
        let order = try await service().create(items: [CartItem(productId: "cider", quantity: 1)], merchant: merchant).order
        let coupon = try await service().update(orderId: order.id, merchant: merchant, event: .coupon("NOPE"))
        #expect(coupon.errors.map(\.code) == ["couponCodeInvalid"])
        #expect(try await store.order(id: order.id)?.priced.couponCode == nil)

        let far = try await service().update(
            orderId: order.id, merchant: merchant,
            event: .shippingContact(countryCode: "JP", postalCode: nil, locality: nil, administrativeArea: nil))
        #expect(far.errors.map(\.code) == ["addressUnserviceable"])
        let stored = try #require(try await store.order(id: order.id))
        #expect(stored.priceVersion == 1 && stored.priced == order.priced, "the old total stands")
    }

    @Test("only the merchant's own open order can change: another's is not found, a paid or expired one is not open")
    func openOnly() async throws {
        let merchant = try ServiceFixtures.merchant()
        let other = try ServiceFixtures.merchant(TestMaterial.secondMerchantIdentifier)
        let order = try await service().create(items: [CartItem(productId: "cider", quantity: 1)], merchant: merchant).order
        #expect(await refusal { _ = try await service().openOrder(id: order.id, merchant: other) }?.code == .notFound)
        #expect(
            await refusal { _ = try await service().openOrder(id: String(repeating: "a", count: 65), merchant: merchant) }?.code
                == .notFound)

        clock.advance(3600)
        let expired = await refusal { _ = try await service().update(orderId: order.id, merchant: merchant, event: .paymentMethod) }
        #expect(expired == CoreError(.orderNotOpen, "this payment request has expired"))

        var paid = try await service().create(items: [CartItem(productId: "cider", quantity: 1)], merchant: merchant).order
        paid.id = RecordIdentifier.random()
        paid.state = .paid
        try await store.insert(paid)
        #expect(
            await refusal { _ = try await service().openOrder(id: paid.id, merchant: merchant) }?.message == "this order is already paid")
    }

    /// A payment request with the shop's own cart (no catalogue prices it).
    func shopRequest(merchant: MerchantConfiguration) async throws -> String {
        var draft = PaymentRequestDraft(amount: 2_000, currency: "EUR", countryCode: "FR", reference: "order-1")
        draft.shippingMethods = [
            .init(identifier: "post", label: "Post", detail: nil, amount: 300, countries: nil),
            .init(identifier: "courier", label: "Courier", detail: nil, amount: 800, countries: ["FR"]),
        ]
        let requests = PaymentRequestService(
            paymentRequests: store, orderPayments: store, refunds: store, vault: .ephemeral(), time: clock.source)
        return try await requests.create(draft, idempotencyKey: "k-1", merchant: merchant).view.id
    }

    @Test("a payment request's order is repriced from the shop's cart; a coupon is the shop's business")
    func shopCart() async throws {
        let merchant = try ServiceFixtures.merchant(catalogue: nil)
        let id = try await shopRequest(merchant: merchant)
        let update = try await service().update(orderId: id, merchant: merchant, event: .shippingMethod("courier"))
        #expect(update.errors.isEmpty && update.newTotal.amount == "28.00")
        #expect(try await store.order(id: id)?.priceVersion == 2)
        let coupon = try await service().update(orderId: id, merchant: merchant, event: .coupon("FREE"))
        #expect(coupon.errors == [ApplePayErrorItem(code: "couponCodeInvalid", message: "this shop takes no coupon codes here")])
        #expect(try await store.order(id: id)?.priceVersion == 2)
    }
}
