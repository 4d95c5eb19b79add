import CurlClient
import Foundation
import OrchardConfiguration
import OrchardCore
import OrchardIntegrationTesting
import OrchardServer
import OrchardServerTesting
import OrchardServices
import OrchardTesting
import Testing

/// The payments API as a shop's backend uses it, over real HTTP: keys, payment requests,
/// the page paying one, capture, refunds and the signed webhooks that report each step.
@Suite("Payments API (/v1): keys, payment requests, refunds, webhooks")
struct PaymentsAPITests {
    static let webhookSecret = MoreMerchants.webhookSecret
    static let cart = APIPayments.cart

    /// The harness with a webhook endpoint for the main merchant, fast retries and a second merchant.
    static func with(
        receiver: MockWebhookReceiver? = nil, transport: HarnessTransport = .router, _ body: (ServerHarness) async throws -> Void
    ) async throws {
        try await ServerHarness.with(
            otherMockMerchants: MoreMerchants.mockMerchants, environment: ["SHOP_WEBHOOK_SECRET": webhookSecret],
            callsShops: true, transport: transport,
            configure: { file, directory in
                try MoreMerchants.addSecondMerchant(&file, directory)
                file.webhooks = .init(firstRetrySeconds: 1, maximumRetrySeconds: 2, pollIntervalMilliseconds: 100)
                if let receiver { file.merchants[0].webhook = .init(url: receiver.url, secret: "env:SHOP_WEBHOOK_SECRET") }
            }, body)
    }

    /// Creates the cart's payment request and pays it as the page would: opened by its client
    /// secret, the courier chosen after an address it does not serve, then authorized.
    func payThroughPage(_ server: ServerHarness, key: String) async throws -> (id: String, paymentId: String) {
        let created = try await server.api("POST", "/v1/payment-requests", key: key, json: APIPayments.cart, idempotencyKey: "pay-1")
        #expect(created.status == 201)
        let id = try #require(created.json?["id"] as? String)
        let secret = try #require(created.json?["clientSecret"] as? String)
        #expect(created.json?["status"] as? String == "requires_payment")
        #expect(created.json?["total"] as? Int == 1734)

        // The page: open by client secret on the shop's domain, pick the courier, pay.
        let forged = try await server.send(
            "POST", "/api/payment-requests/open", body: Array(#"{"clientSecret": "\#(id)_secret_00"}"#.utf8))
        #expect(forged.status == 404)
        let opened = try await server.send("POST", "/api/payment-requests/open", body: Array(#"{"clientSecret": "\#(secret)"}"#.utf8))
        #expect(opened.status == 200)
        let request = try #require(opened.json?["paymentRequest"] as? [String: Any])
        #expect((request["lineItems"] as? [[String: Any]])?.count == 3)
        #expect(request["requiredShippingContactFields"] as? [String] == ["postalAddress", "email"])
        let abroad = try await server.send(
            "POST", "/api/orders/\(id)/shipping-contact", body: Array(#"{"countryCode": "DE"}"#.utf8))
        #expect((abroad.json?["newShippingMethods"] as? [[String: Any]])?.count == 1)
        let courier = try await server.send(
            "POST", "/api/orders/\(id)/shipping-method", body: Array(#"{"identifier": "courier"}"#.utf8))
        #expect(courier.status == 400)  // the courier does not ship to Germany
        let france = try await server.send("POST", "/api/orders/\(id)/shipping-contact", body: Array(#"{"countryCode": "FR"}"#.utf8))
        #expect(france.status == 200)
        let chosen = try await server.send(
            "POST", "/api/orders/\(id)/shipping-method", body: Array(#"{"identifier": "courier"}"#.utf8))
        #expect((chosen.json?["newTotal"] as? [String: Any])?["amount"] as? String == "27.34")
        let pay = try PageCheckout.paymentBody(orderId: id, request: request, amount: 2734)
        let authorized = try await server.send("POST", "/api/apple-pay/authorize", body: pay)
        #expect(authorized.status == 200)
        let paymentId = try #require(authorized.json?["paymentId"] as? String)
        // Opened again, the request says it is paid, and shows the shopper nothing of the
        // processor's (its reference, codes, messages) nor the shop's metadata.
        let paid = try await server.send("POST", "/api/payment-requests/open", body: Array(#"{"clientSecret": "\#(secret)"}"#.utf8))
        #expect(paid.json?["status"] as? String == "paid")
        let shown = try #require((paid.json?["payments"] as? [[String: Any]])?.first)
        #expect(shown["id"] as? String == paymentId && shown["state"] as? String == "authorized")
        #expect(Set(shown.keys) == ["id", "state", "amount", "currency", "network", "lastFour", "createdAt"])
        #expect(paid.json?["metadata"] == nil && paid.json?["clientSecret"] == nil)
        #expect(!String(decoding: paid.body, as: UTF8.self).contains("processor"))
        return (id, paymentId)
    }

    @Test("the page pays a payment request; capture, refunds and each step's signed webhook follow")
    func payCaptureRefund() async throws {
        let receiver = MockWebhookReceiver(secret: Self.webhookSecret)
        try await receiver.start()
        defer { Task { await receiver.stop() } }
        try await Self.with(receiver: receiver) { server in
            let key = try await server.apiKey()
            let (id, paymentId) = try await payThroughPage(server, key: key)
            let paid = try await server.api("GET", "/v1/payment-requests/\(id)", key: key)
            #expect(paid.json?["status"] as? String == "paid")
            #expect((paid.json?["payments"] as? [[String: Any]])?.first?["id"] as? String == paymentId)
            let captured = try await server.api("POST", "/v1/payments/\(paymentId)/capture", key: key)
            #expect((captured.json?["payment"] as? [String: Any])?["state"] as? String == "settled")

            // Refunds: two partials, one over what is left, then the rest; a repeated key refunds nothing more.
            let first = try await server.api(
                "POST", "/v1/payments/\(paymentId)/refunds", key: key, json: #"{"amount": 1000}"#, idempotencyKey: "r1")
            #expect(first.status == 201)
            #expect(first.json?["state"] as? String == "refunded")
            let again = try await server.api(
                "POST", "/v1/payments/\(paymentId)/refunds", key: key, json: #"{"amount": 1000}"#, idempotencyKey: "r1")
            #expect(again.json?["id"] as? String == first.json?["id"] as? String)
            let second = try await server.api(
                "POST", "/v1/payments/\(paymentId)/refunds", key: key, json: #"{"amount": 700}"#, idempotencyKey: "r2")
            #expect(second.status == 201)
            let over = try await server.api(
                "POST", "/v1/payments/\(paymentId)/refunds", key: key, json: #"{"amount": 1035}"#, idempotencyKey: "r3")
            #expect(over.status == 422)
            #expect(over.errorCode == "refund_too_large")
            let rest = try await server.api("POST", "/v1/payments/\(paymentId)/refunds", key: key, json: "{}", idempotencyKey: "r4")
            #expect(rest.json?["amount"] as? Int == 1034)
            let detail = try await server.api("GET", "/v1/payments/\(paymentId)", key: key)
            #expect((detail.json?["payment"] as? [String: Any])?["amountRefunded"] as? Int == 2734)
            #expect((detail.json?["refunds"] as? [[String: Any]])?.count == 3)

            let expected = ["payment.authorized", "payment.settled", "payment.refunded", "payment.refunded", "payment.refunded"]
            let seen = try await receiver.wait { $0.count >= expected.count }
            #expect(seen.map(\.type) == expected)
            #expect(seen.allSatisfy { $0.verified })
            // The Standard Webhooks signature too: a secret without whsec_ keys it with its UTF-8 bytes.
            #expect(seen.allSatisfy { $0.standardVerified(with: Secret(Self.webhookSecret)) && $0.standard["webhook-id"] == $0.eventId })
            #expect(Set(seen.map(\.eventId)).count == expected.count)
            let authorizedEvent = try #require(seen.first?.json)
            let data = try #require(authorizedEvent["data"] as? [String: Any])
            #expect((data["paymentRequest"] as? [String: Any])?["reference"] as? String == "order-1001")
            #expect((data["payment"] as? [String: Any])?["amount"] as? Int == 2734)

            // Another merchant sees none of it, and cannot act on it.
            let otherKey = try await server.apiKey(for: TestMaterial.secondMerchantIdentifier)
            for (method, path) in [
                ("GET", "/v1/payment-requests/\(id)"), ("GET", "/v1/payments/\(paymentId)"), ("POST", "/v1/payments/\(paymentId)/cancel"),
            ] {
                let response = try await server.api(method, path, key: otherKey)
                #expect(response.status == 404, "\(method) \(path)")
            }
            let refundOther = try await server.api(
                "POST", "/v1/payments/\(paymentId)/refunds", key: otherKey, json: "{}", idempotencyKey: "steal")
            #expect(refundOther.status == 404)
            #expect(try await server.store.refunds(paymentId: paymentId).count == 3)
        }
    }

    @Test("a receiver that is down, then fails, gets each event once it answers 2xx, never again after")
    func webhookRetries() async throws {
        let receiver = MockWebhookReceiver(secret: Self.webhookSecret)
        try await receiver.start()
        await receiver.goDown()  // connections closed unanswered, on the port the configuration names
        try await Self.with(receiver: receiver) { server in
            let key = try await server.apiKey()
            let created = try await server.api("POST", "/v1/payment-requests", key: key, json: Self.cart, idempotencyKey: "w-1")
            let id = try #require(created.json?["id"] as? String)
            let request = try #require(created.json?["paymentRequest"] as? [String: Any])
            let pay = try PageCheckout.paymentBody(orderId: id, request: request, amount: 1734)
            #expect(try await server.send("POST", "/api/apple-pay/authorize", body: pay).status == 200)
            // The first attempt fails at once; polled, as a loaded machine may take seconds to make it.
            var pending: [WebhookEvent] = []
            _ = try await Eventually.until {
                pending = try await server.store.webhookEvents(merchantIdentifier: nil, state: .pending, limit: 10)
                return (pending.first?.attempts ?? 0) >= 1
            }
            #expect(pending.count == 1)
            #expect((pending.first?.attempts ?? 0) >= 1)
            #expect(pending.first?.lastError != nil)

            receiver.answer(500)
            receiver.comeBack()
            let failing = try await receiver.wait { $0.count >= 2 }
            #expect(failing.allSatisfy { $0.status == 500 })
            receiver.answer(204)
            let delivered = try await receiver.wait { $0.contains { $0.status == 204 } }
            let eventId = try #require(receiver.accepted.first?.eventId)
            #expect(Set(delivered.map(\.eventId)) == [eventId])
            #expect(delivered.allSatisfy { $0.verified })
            // Recorded as delivered, the event is never leased again; a later event, delivered after it, is where
            // a wrong second delivery (one already under way, or a retry the record missed) would have shown.
            #expect(try await Eventually.until { try await server.store.webhookEvent(id: eventId)?.state == .delivered })
            let event = try #require(try await server.store.webhookEvent(id: eventId))
            #expect(event.lastStatus == 204)
            let later = try await server.api("POST", "/v1/payment-requests", key: key, json: Self.cart, idempotencyKey: "w-2")
            let laterId = try #require(later.json?["id"] as? String)
            let laterRequest = try #require(later.json?["paymentRequest"] as? [String: Any])
            let laterPay = try PageCheckout.paymentBody(orderId: laterId, request: laterRequest, amount: 1734)
            #expect(try await server.send("POST", "/api/apple-pay/authorize", body: laterPay).status == 200)
            _ = try await receiver.wait { $0.contains { $0.status == 204 && $0.eventId != eventId } }
            #expect(receiver.accepted.filter { $0.eventId == eventId }.count == 1)
            #expect(receiver.deliveries.filter { $0.eventId == eventId }.count == delivered.count)
        }
        await receiver.stop()
    }
}
