import ApplePay
import Crypto
import Foundation
import OrchardCore
import OrchardInMemory
import OrchardTesting
import Testing

/// ``PaymentRequestService`` in memory: a request and its order made once per Idempotency-Key,
/// the shop's inputs bounded, and what the shop and the shopper each see.
@Suite("PaymentRequestService: creating, replaying and showing payment requests, in memory")
struct PaymentRequestServiceTests {
    let store = InMemoryStore()
    let clock = TestClock()
    let vault = PaymentVault.ephemeral()

    var service: PaymentRequestService {
        PaymentRequestService(paymentRequests: store, orderPayments: store, refunds: store, vault: vault, time: clock.source)
    }

    static func draft(amount: Int64 = 2_500, reference: String = "order-42") -> PaymentRequestDraft {
        var draft = PaymentRequestDraft(amount: amount, currency: "EUR", countryCode: "FR", reference: reference)
        draft.metadata = ["customer": "c-9"]
        draft.shippingMethods = [.init(identifier: "post", label: "Post", detail: "2 days", amount: 400, countries: nil)]
        return draft
    }

    func refusal(_ body: () async throws -> Void) async -> CoreError? { await ServiceFixtures.refusal(body) }

    @Test("a request and its open order are made together; the view prices the first method and its secret opens it")
    func create() async throws {
        let merchant = try ServiceFixtures.merchant()
        let (view, created) = try await service.create(Self.draft(), idempotencyKey: "key-1", merchant: merchant)
        #expect(created && view.status == "requires_payment" && view.amount == 2_500 && view.total == 2_900)
        #expect(view.reference == "order-42" && view.metadata == ["customer": "c-9"] && view.tokenNotificationPath == nil)
        #expect(view.expiresAt == ServiceFixtures.start.addingTimeInterval(TimeInterval(PaymentRequestService.defaultExpiry)))
        let order = try #require(try await store.order(id: view.id))
        #expect(order.state == .open && order.priced.total == 2_900 && order.applicationData == OrderRecord.binding(orderId: view.id))
        let record = try #require(try await store.paymentRequest(id: view.id))
        let fingerprint = try Self.draft().fingerprint()
        #expect(record.idempotencyKey == "key-1" && record.fingerprint == fingerprint)

        let shopper = try await service.open(clientSecret: view.clientSecret, merchant: merchant, simulatedSheet: nil)
        #expect(shopper.id == view.id && shopper.total == 2_900 && shopper.reference == "order-42")
        #expect(
            await refusal { _ = try await service.open(clientSecret: "nope", merchant: merchant, simulatedSheet: nil) }?.code == .notFound)
    }

    @Test("a request may take payment for up to 30 days, as a ticket shop's payment term does; the view names its idempotency key")
    func thirtyDays() async throws {
        var draft = Self.draft()
        draft.expiresInSeconds = 2_592_000
        let (view, _) = try await service.create(draft, idempotencyKey: "term-30", merchant: try ServiceFixtures.merchant())
        #expect(view.expiresAt == ServiceFixtures.start.addingTimeInterval(2_592_000) && view.idempotencyKey == "term-30")
    }

    @Test("totalLabel names the sheet's total, on the request and on every update; a label of 101 characters is refused")
    func totalLabel() async throws {
        let merchant = try ServiceFixtures.merchant()
        var draft = Self.draft()
        draft.totalLabel = "Spring concert, 12 April"
        let (view, _) = try await service.create(draft, idempotencyKey: "label-1", merchant: merchant)
        #expect(view.paymentRequest.total.label == "Spring concert, 12 April")
        let orders = OrderService(orders: store, paymentRequests: store, quotes: nil, time: clock.source, openFor: 3600)
        let update = try await orders.update(orderId: view.id, merchant: merchant, event: .shippingMethod("post"))
        #expect(update.newTotal.label == "Spring concert, 12 April")
        draft.totalLabel = String(repeating: "x", count: 101)
        let refused = await refusal { _ = try await service.create(draft, idempotencyKey: "label-2", merchant: merchant) }
        #expect(refused?.code == .invalidCart && refused?.message.contains("totalLabel") == true)
    }

    @Test("the same Idempotency-Key with the same draft answers the first request; with another draft it is refused")
    func idempotency() async throws {
        let merchant = try ServiceFixtures.merchant()
        let first = try await service.create(Self.draft(), idempotencyKey: "key-2", merchant: merchant)
        let again = try await service.create(Self.draft(), idempotencyKey: "key-2", merchant: merchant)
        #expect(!again.created && again.view.id == first.view.id)
        let other = await refusal { _ = try await service.create(Self.draft(amount: 9_999), idempotencyKey: "key-2", merchant: merchant) }
        #expect(other?.code == .idempotencyMismatch)
        // Another merchant's key of the same name is its own.
        let second = try await service.create(
            Self.draft(), idempotencyKey: "key-2", merchant: try ServiceFixtures.merchant(TestMaterial.secondMerchantIdentifier))
        #expect(second.created && second.view.id != first.view.id)
    }

    @Test("an agreement is refused up front where the processor holds a processing key: Apple's notifications would go unmatched")
    func agreementNeedsOrchardHeldKey() async throws {
        var merchant = try ServiceFixtures.merchant()
        let certificate = try TestMaterial.shared.pki.processingCertificatePEM(
            merchantIdentifier: merchant.merchantIdentifier, for: P256.KeyAgreement.PrivateKey().publicKey)
        merchant.processingKeys = [try ProcessingKey(processorHeldCertificatePEM: certificate)]
        var draft = Self.draft()
        draft.agreement = PaymentAgreement(
            type: .recurring, paymentDescription: "Coffee club", managementURL: "https://shop.example/account",
            regularBilling: .init(label: "Monthly", amount: 990))
        let refused = await refusal { _ = try await service.create(draft, idempotencyKey: "key-mandate", merchant: merchant) }
        #expect(refused?.code == .invalidAgreement)
        #expect(refused?.message.contains("processingKeys[0] is a certificate alone") == true, "\(refused?.message ?? "")")
        // Nothing was stored under the key: without the agreement, the same key makes a new request.
        draft.agreement = nil
        #expect(try await service.create(draft, idempotencyKey: "key-mandate", merchant: merchant).created)
    }

    @Test("bad inputs are refused with what to fix, before anything is stored")
    func refused() async throws {
        let merchant = try ServiceFixtures.merchant()
        var cases: [(PaymentRequestDraft, CoreError.Code, MerchantConfiguration)] = []
        var draft = Self.draft()
        draft.expiresInSeconds = 59
        cases.append((draft, .invalidRequest, merchant))
        draft.expiresInSeconds = 2_592_001
        cases.append((draft, .invalidRequest, merchant))
        draft = Self.draft(reference: "")
        cases.append((draft, .invalidRequest, merchant))
        draft = Self.draft()
        draft.metadata = Dictionary(uniqueKeysWithValues: (0..<21).map { ("k\($0)", "v") })
        cases.append((draft, .invalidRequest, merchant))
        draft = Self.draft()
        draft.multiTokenContexts = [.init(merchantIdentifier: "merchant.other")]
        cases.append((draft, .invalidRequest, merchant))
        draft = Self.draft(amount: 0)
        cases.append((draft, .invalidCart, merchant))
        draft = Self.draft()
        draft.countryCode = nil
        cases.append((draft, .invalidRequest, try ServiceFixtures.merchant(catalogue: nil)))
        for (index, (draft, code, merchant)) in cases.enumerated() {
            let error = await refusal { _ = try await service.create(draft, idempotencyKey: "key-\(index)", merchant: merchant) }
            #expect(error?.code == code, "case \(index)")
        }
        #expect(try await store.expireOrders(at: clock.source.now.addingTimeInterval(1e6), limit: 100).isEmpty, "no order was stored")
    }

    @Test("a request is only its merchant's, and its status follows its order and its expiry")
    func visibility() async throws {
        let merchant = try ServiceFixtures.merchant()
        let view = try await service.create(Self.draft(), idempotencyKey: "key-3", merchant: merchant).view
        let other = try ServiceFixtures.merchant(TestMaterial.secondMerchantIdentifier)
        #expect(await refusal { _ = try await service.request(id: view.id, merchant: other) }?.code == .notFound)
        #expect(
            await refusal { _ = try await service.open(clientSecret: view.clientSecret, merchant: other, simulatedSheet: nil) }?.code
                == .notFound)
        clock.advance(TimeInterval(PaymentRequestService.defaultExpiry))
        let record = try await service.request(id: view.id, merchant: merchant)
        #expect(try await service.view(record, merchant: merchant).status == "expired")
    }

    @Test("the shop's Idempotency-Key: required, 1–255 visible ASCII characters")
    func idempotencyKeys() throws {
        #expect(try ShopInput.idempotencyKey("0b7c6f1e-uuid") == "0b7c6f1e-uuid")
        for bad in [nil, "", "with space", String(repeating: "k", count: 256), "café"] {
            #expect(throws: CoreError.self) { try ShopInput.idempotencyKey(bad) }
        }
    }
}
