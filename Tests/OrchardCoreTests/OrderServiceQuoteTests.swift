import ApplePay
import Foundation
import OrchardCore
import OrchardInMemory
import OrchardTesting
import Synchronization
import Testing

/// ``OrderService`` with a shop that prices sheet changes at its quote URL (in memory): the
/// question is signed, the shop's price is taken only when it checks, and a repricing that
/// loses its compare-and-set changes nothing.
@Suite("OrderService: the shop's quote URL, in memory")
struct OrderServiceQuoteTests {
    let store = InMemoryStore()
    let clock = TestClock()
    static let endpoint = WebhookEndpoint(url: "https://shop.example/orchard/quote", secret: Secret("quote-secret"))

    func setUp(_ shop: QuotingShop) async throws -> (OrderService, MerchantConfiguration, String) {
        let merchant = try ServiceFixtures.merchant(catalogue: nil, quote: Self.endpoint)
        var draft = PaymentRequestDraft(amount: 2_000, currency: "EUR", countryCode: "FR", reference: "order-7")
        draft.metadata = ["cart": "c-7"]
        draft.shippingMethods = [.init(identifier: "post", label: "Post", detail: nil, amount: 300, countries: nil)]
        let requests = PaymentRequestService(
            paymentRequests: store, orderPayments: store, refunds: store, vault: .ephemeral(), time: clock.source)
        let id = try await requests.create(draft, idempotencyKey: "k-7", merchant: merchant).view.id
        return (
            OrderService(
                orders: store, paymentRequests: store, quotes: .inMemory(shop, clock: clock), time: clock.source, openFor: 3600), merchant,
            id
        )
    }

    @Test("the shop is asked with a signed question and its amount, methods and selected method are taken")
    func taken() async throws {
        let shop = QuotingShop(
            answer: """
                {"amount": 1800, "lineItems": [{"label": "Apples", "amount": 1800}],
                 "shippingMethods": [{"identifier": "post", "label": "Post", "amount": 300},
                                     {"identifier": "pickup", "label": "Pick-up", "amount": 0}],
                 "shippingMethod": "pickup", "couponCode": "SPRING"}
                """)
        let (service, merchant, id) = try await setUp(shop)
        let update = try await service.update(
            orderId: id, merchant: merchant,
            event: .shippingContact(countryCode: "FR", postalCode: "75001", locality: "Paris", administrativeArea: nil))
        #expect(update.errors.isEmpty && update.newTotal.amount == "18.00")
        // Apple Pay lists the selected method first.
        #expect(update.newShippingMethods?.map(\.identifier) == ["pickup", "post"])
        let stored = try #require(try await store.order(id: id))
        #expect(stored.priceVersion == 2 && stored.priced.total == 1_800 && stored.priced.couponCode == "SPRING")
        #expect(stored.priced.shippingAddress == RedactedAddress(countryCode: "FR", postalCode: "75001", locality: "Paris"))

        let asked = try #require(shop.asked.withLock { $0 }.first)
        let question = try #require(shop.questions.first)
        #expect(question.paymentRequestId == id && question.reference == "order-7" && question.metadata == ["cart": "c-7"])
        #expect(question.amount == 2_000 && question.shippingContact?.postalCode == "75001")
        #expect(
            WebhookSignature.verify(
                header: try #require(asked.signature), body: asked.body, secret: Self.endpoint.secret, now: ServiceFixtures.start))
    }

    @Test(
        "an answer that does not check fails the update and keeps the old total",
        arguments: [
            (200, #"{"amount": -5}"#),  // a cart that does not check
            (200, #"{"amount": 100, "errors": [{"code": "madeUp", "message": "x"}]}"#),  // not Apple Pay's code
            (200, "<html>"),  // not a quote
            (500, #"{"amount": 100}"#),  // not 2xx
        ])
    func refused(status: Int, answer: String) async throws {
        let (service, merchant, id) = try await setUp(QuotingShop(status: status, answer: answer))
        let before = try #require(try await store.order(id: id))
        do {
            _ = try await service.update(orderId: id, merchant: merchant, event: .shippingMethod("post"))
            Issue.record("the update succeeded")
        } catch let error as CoreError {
            #expect(error.code == .quoteFailed && error.message.hasSuffix("the total is unchanged"))
        }
        #expect(try await store.order(id: id) == before)
    }

    @Test("a shop that cannot be reached fails the update without naming where it was called")
    func unreachable() async throws {
        let (service, merchant, id) = try await setUp(QuotingShop(answer: nil))
        do {
            _ = try await service.update(orderId: id, merchant: merchant, event: .paymentMethod)
            Issue.record("the update succeeded")
        } catch let error as CoreError {
            #expect(error.code == .quoteFailed && !error.message.contains("shop.example"))
        }
        #expect(try await store.order(id: id)?.priceVersion == 1)
    }

    @Test("a repricing that lands while the shop is asked wins: this one loses its compare-and-set and changes nothing")
    func raced() async throws {
        let store = self.store
        let holder = RaceHolder()
        let shop = QuotingShop(answer: #"{"amount": 1500}"#) {
            // Another update of the same order lands while the shop is thinking.
            guard let id = holder.id, let order = try await store.order(id: id) else { return }
            var priced = order.priced
            priced.total = 4_242
            try await store.updateOpen(order.repriced(priced))
        }
        let (service, merchant, id) = try await setUp(shop)
        holder.id = id
        do {
            _ = try await service.update(orderId: id, merchant: merchant, event: .shippingMethod("post"))
            Issue.record("the stale repricing succeeded")
        } catch let error as CoreError {
            #expect(error.code == .orderChanged)
        }
        let stored = try #require(try await store.order(id: id))
        #expect(stored.priceVersion == 2 && stored.priced.total == 4_242, "the other update's price stands")
    }
}

/// The order a racing update targets, set once the test knows it.
final class RaceHolder: Sendable {
    private let value = Mutex<String?>(nil)
    var id: String? {
        get { value.withLock { $0 } }
        set { value.withLock { $0 = newValue } }
    }
}
