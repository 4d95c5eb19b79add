import ApplePay
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

/// A shop that prices sheet changes itself: Orchard asks its quote URL, shows its answer, and
/// never a total the shop did not give.
@Suite("Shop-priced updates through the quote URL")
struct QuoteTests {
    static let secret = String(repeating: "q", count: 40)
    static let quote = """
        {"amount": 2000, "lineItems": [{"label": "Sencha", "amount": 1800}, {"label": "Gift wrap", "amount": 200}],
         "shippingMethods": [{"identifier": "local", "label": "Local courier", "amount": 300},
                             {"identifier": "post", "label": "Post", "detail": "3 days", "amount": 500}],
         "shippingMethod": "local", "couponCode": "TEA20"}
        """

    static func with(_ quotes: MockWebhookReceiver, _ body: (ServerHarness) async throws -> Void) async throws {
        try await ServerHarness.with(
            environment: ["QUOTE_SECRET": secret], callsShops: true,
            configure: { file, _ in file.merchants[0].quote = .init(url: quotes.url, secret: "env:QUOTE_SECRET") }, body)
    }

    func update(_ server: ServerHarness, _ id: String, _ path: String, _ body: String) async throws -> CurlResponse {
        try await server.send("POST", "/api/orders/\(id)/\(path)", body: Array(body.utf8))
    }

    @Test("the shop's answer becomes the sheet's total and the order's; a failing quote keeps the old total and says so")
    func quoted() async throws {
        let quotes = MockWebhookReceiver(secret: Self.secret)
        try await quotes.start()
        defer { Task { await quotes.stop() } }
        try await Self.with(quotes) { server in
            let key = try await server.apiKey()
            let created = try await server.api("POST", "/v1/payment-requests", key: key, json: PaymentsAPITests.cart, idempotencyKey: "q1")
            let id = try #require(created.json?["id"] as? String)
            #expect((created.json?["paymentRequest"] as? [String: Any])?["supportsCouponCode"] as? Bool == true)

            quotes.answer(200, body: Self.quote)
            let france = try await update(
                server, id, "shipping-contact", #"{"countryCode": "FR", "postalCode": "75011", "locality": "Paris"}"#)
            #expect(france.status == 200)
            #expect((france.json?["newTotal"] as? [String: Any])?["amount"] as? String == "23.00")
            #expect((france.json?["newShippingMethods"] as? [[String: Any]])?.first?["identifier"] as? String == "local")
            #expect(try await server.store.order(id: id)?.priced.total == 2300)
            let asked = try #require(quotes.deliveries.last)
            #expect(asked.verified, "signed like a webhook")
            #expect(asked.standardVerified(with: Secret(Self.secret)), "to the Standard Webhooks specification too")
            #expect(asked.standard["webhook-id"]?.hasPrefix("quo_") == true)
            let contact = asked.json?["shippingContact"] as? [String: Any]
            #expect(contact?["countryCode"] as? String == "FR" && contact?["postalCode"] as? String == "75011")
            #expect(asked.json?["reference"] as? String == "order-1001")

            let coupon = try await update(server, id, "coupon", #"{"couponCode": "TEA20"}"#)
            #expect(quotes.deliveries.last?.json?["couponCode"] as? String == "TEA20")
            let kept = quotes.deliveries.last?.json?["shippingContact"] as? [String: Any]
            #expect(kept?["postalCode"] as? String == "75011", "a later change is quoted for the same address")
            #expect(coupon.status == 200)

            // Failures: an error status, no answer in 3 s, nonsense, lines that do not add up, an unknown error code.
            let failures: [(Int, String, Duration)] = [
                (500, "", .zero), (200, Self.quote, .seconds(4)), (200, "<html>", .zero),
                (200, #"{"amount": 2000, "lineItems": [{"label": "A", "amount": 1}]}"#, .zero),
                (200, #"{"amount": 2000, "errors": [{"code": "creditCardInvalid", "message": "x"}]}"#, .zero),
                // A hostile shop's numbers: they used to trap in abs() and take the process down.
                (200, #"{"amount": 2000, "lineItems": [{"label": "A", "amount": -9223372036854775808}]}"#, .zero),
                (
                    200,
                    #"{"amount": 9223372036854775807, "shippingMethods": [{"identifier": "x", "label": "X", "amount": 9223372036854775807}]}"#,
                    .zero
                ),
            ]
            for (status, body, delay) in failures {
                quotes.answer(status, body: body, delay: delay)
                // The late answer is a valid quote: only the 3 s deadline turns it into a 502.
                let failed = try await update(server, id, "shipping-method", #"{"identifier": "post"}"#)
                #expect(failed.status == 502, "\(status) \(body.prefix(20))")
                #expect(failed.errorCode == "quote_failed")
                #expect(failed.errorMessage?.contains("the total is unchanged") == true)
                #expect(try await server.store.order(id: id)?.priced.total == 2300)
            }
            await quotes.goDown()
            let down = try await update(server, id, "shipping-method", #"{"identifier": "post"}"#)
            #expect(down.status == 502)
            quotes.comeBack()

            // The shop's errors reach the sheet with its totals.
            quotes.answer(200, body: #"{"amount": 2000, "errors": [{"code": "couponCodeExpired", "message": "TEA20 ended yesterday"}]}"#)
            let expired = try await update(server, id, "coupon", #"{"couponCode": "TEA20"}"#)
            #expect((expired.json?["errors"] as? [[String: Any]])?.first?["code"] as? String == "couponCodeExpired")

            // The token pays the shop's total.
            quotes.answer(200, body: Self.quote)
            _ = try await update(server, id, "shipping-contact", #"{"countryCode": "FR"}"#)
            let request = try #require(created.json?["paymentRequest"] as? [String: Any])
            let pay = try PageCheckout.paymentBody(orderId: id, request: request, amount: 2300)
            #expect(try await server.send("POST", "/api/apple-pay/authorize", body: pay).status == 200)
        }
    }
}
