import ApplePay
import Crypto
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

/// Recurring, deferred and automatic-reload payments through the payments API, over real HTTP:
/// agreements checked, the first payment with a merchant token setting up a mandate, later
/// merchant-initiated charges, ending it, and Apple's token events from the mock gateway.
@Suite("Mandates API (/v1/mandates): agreements, merchant tokens, charges, token events")
struct MandatesAPITests {
    static let start = RecurringPayment.start
    static let recurring = RecurringPayment.request

    /// A body with `agreement` replaced.
    static func body(agreement: String) -> String {
        #"{"amount": 990, "currency": "EUR", "reference": "r", "agreement": \#(agreement)}"#
    }

    @Test("malformed recurring, deferred and reload agreements each get their own 400; a split payment is refused; nothing is created")
    func validation() async throws {
        try await PaymentsAPITests.with { server in
            let key = try await server.apiKey()
            let past = "2020-01-01T00:00:00Z"
            let cases: [(String, String)] = [
                (
                    #"{"type": "recurring", "paymentDescription": "x", "managementURL": "http://shop.example/a", "regularBilling": {"label": "m", "amount": 1}}"#,
                    "managementURL"
                ),
                (#"{"type": "recurring", "paymentDescription": "x", "managementURL": "https://shop.example/a"}"#, "regularBilling"),
                (
                    #"{"type": "recurring", "paymentDescription": "x", "managementURL": "https://shop.example/a", "regularBilling": {"label": "m", "amount": 0}}"#,
                    "regularBilling.amount"
                ),
                (
                    #"{"type": "recurring", "paymentDescription": "x", "managementURL": "https://shop.example/a", "regularBilling": {"label": "m", "amount": 5, "startDate": "\#(past)"}}"#,
                    "startDate"
                ),
                (
                    #"{"type": "recurring", "paymentDescription": "", "managementURL": "https://shop.example/a", "regularBilling": {"label": "m", "amount": 5}}"#,
                    "paymentDescription"
                ),
                (
                    #"{"type": "deferred", "paymentDescription": "Hotel", "managementURL": "https://shop.example/a", "deferredBilling": {"label": "Stay", "amount": 5, "paymentDate": "\#(past)"}}"#,
                    "paymentDate"
                ),
                (
                    #"{"type": "deferred", "paymentDescription": "Hotel", "managementURL": "https://shop.example/a", "deferredBilling": {"label": "Stay", "amount": 5}}"#,
                    "paymentDate"
                ),
                (
                    #"{"type": "automaticReload", "paymentDescription": "Top-up", "managementURL": "https://shop.example/a", "automaticReloadBilling": {"label": "Top-up", "amount": 2000}}"#,
                    "thresholdAmount"
                ),
                (
                    #"{"type": "automaticReload", "paymentDescription": "Top-up", "managementURL": "https://shop.example/a", "regularBilling": {"label": "m", "amount": 5}}"#,
                    "regularBilling"
                ),
                (#"{"type": "weekly", "paymentDescription": "x", "managementURL": "https://shop.example/a"}"#, "JSON"),
            ]
            for (index, (agreement, word)) in cases.enumerated() {
                let response = try await server.api(
                    "POST", "/v1/payment-requests", key: key, json: Self.body(agreement: agreement), idempotencyKey: "a\(index)")
                #expect(response.status == 400, "\(agreement)")
                #expect(response.errorMessage?.contains(word) == true, "\(response.errorMessage ?? "") should name \(word)")
            }
            let split = try await server.api(
                "POST", "/v1/payment-requests", key: key,
                json: #"{"amount": 990, "currency": "EUR", "reference": "r", "multiTokenContexts": [{"merchantIdentifier": "m"}]}"#,
                idempotencyKey: "split")
            #expect(split.status == 400)
            #expect(split.errorMessage?.contains("multiTokenContexts") == true)
            #expect(try await server.store.webhookEvents(merchantIdentifier: nil, state: nil, limit: 10).isEmpty)
            let nothing = try await server.api("GET", "/v1/mandates", key: key)
            #expect((nothing.json?["mandates"] as? [Any])?.isEmpty == true)
        }
    }

    static func payRecurring(_ server: ServerHarness, key: String, token: String) async throws -> (request: String, payment: [String: Any])
    {
        try await RecurringPayment.pay(server, key: key, token: token)
    }

    @Test(
        "a merchant token sets up a mandate; charges are idempotent; ending it unlinks at Apple and stops charges; webhooks report each step"
    )
    func mandateLifecycle() async throws {
        let receiver = MockWebhookReceiver(secret: PaymentsAPITests.webhookSecret)
        try await receiver.start()
        defer { Task { await receiver.stop() } }
        try await PaymentsAPITests.with(receiver: receiver) { server in
            let key = try await server.apiKey()
            let token = "DNITHE000000000000000001"
            _ = server.gateway.addTokenEvent(eventType: "UPDATED_METADATA", merchantTokenIdentifier: token)  // Apple knows the token
            let (_, payment) = try await Self.payRecurring(server, key: key, token: token)
            #expect(payment["merchantTokenIdentifier"] as? String == token)
            let mandateId = try #require(payment["mandateId"] as? String)
            let listed = try await server.api("GET", "/v1/mandates?state=active", key: key)
            let mandate = try #require((listed.json?["mandates"] as? [[String: Any]])?.first)
            #expect(mandate["id"] as? String == mandateId && mandate["type"] as? String == "recurring")
            #expect(mandate["description"] as? String == "Coffee club" && mandate["currency"] as? String == "EUR")
            #expect(mandate["credential"] == nil)
            let stored = try #require(try await server.store.payment(id: payment["id"] as? String ?? ""))
            #expect(stored.merchantTokenMetadata?.cardMetadata?.fpanSuffix == "4242")
            #expect(!String(decoding: try JSONEncoder().encode(stored), as: UTF8.self).contains("5204240750197840"), "never the MPAN")

            let charge = #"{"amount": 990, "reference": "inv-2"}"#
            let first = try await server.api("POST", "/v1/mandates/\(mandateId)/charges", key: key, json: charge, idempotencyKey: "c1")
            #expect(first.status == 201)
            let charged = try #require(first.json?["payment"] as? [String: Any])
            #expect(charged["state"] as? String == "authorized" && charged["mandateId"] as? String == mandateId)
            #expect(charged["amount"] as? Int == 990 && charged["lastFour"] as? String == stored.lastFour)
            let again = try await server.api("POST", "/v1/mandates/\(mandateId)/charges", key: key, json: charge, idempotencyKey: "c1")
            #expect(again.status == 200)
            #expect((again.json?["payment"] as? [String: Any])?["id"] as? String == charged["id"] as? String, "one charge per key")
            let changed = try await server.api(
                "POST", "/v1/mandates/\(mandateId)/charges", key: key, json: #"{"amount": 989, "reference": "inv-2"}"#, idempotencyKey: "c1"
            )
            #expect(changed.status == 422)
            // The shopper agreed to 9.90 a month: more needs the shop to say why.
            let above = try await server.api(
                "POST", "/v1/mandates/\(mandateId)/charges", key: key, json: #"{"amount": 991, "reference": "inv-3"}"#, idempotencyKey: "c3"
            )
            #expect(
                above.status == 400 && above.errorMessage?.contains("regularBilling.amount (990)") == true, "\(above.errorMessage ?? "")")
            let noReason = try await server.api(
                "POST", "/v1/mandates/\(mandateId)/charges", key: key,
                json: #"{"amount": 1190, "reference": "inv-3", "allowAmountAbove": {"reason": " "}}"#, idempotencyKey: "c3")
            #expect(noReason.status == 400 && noReason.errorMessage?.contains("allowAmountAbove.reason") == true)
            let raised = try await server.api(
                "POST", "/v1/mandates/\(mandateId)/charges", key: key,
                json: #"{"amount": 1190, "reference": "inv-3", "allowAmountAbove": {"reason": "new price, notified 30 days ahead"}}"#,
                idempotencyKey: "c3")
            #expect(raised.status == 201 && (raised.json?["payment"] as? [String: Any])?["amount"] as? Int == 1190)
            for (bad, word) in [(#"{"amount": 0, "reference": "x"}"#, "amount"), (#"{"amount": 5, "reference": ""}"#, "reference")] {
                let refused = try await server.api(
                    "POST", "/v1/mandates/\(mandateId)/charges", key: key, json: bad, idempotencyKey: "bad-\(word)")
                #expect(refused.status == 400 && refused.errorMessage?.contains(word) == true, "\(bad)")
            }
            let otherKey = try await server.apiKey(for: TestMaterial.secondMerchantIdentifier)
            let stolen = try await server.api("POST", "/v1/mandates/\(mandateId)/charges", key: otherKey, json: charge, idempotencyKey: "x")
            #expect(stolen.status == 404)
            #expect(try await server.api("DELETE", "/v1/mandates/\(mandateId)", key: otherKey).status == 404)

            let ended = try await server.api("DELETE", "/v1/mandates/\(mandateId)", key: key)
            #expect(ended.status == 200)
            #expect(ended.json?["state"] as? String == "ended" && ended.json?["endedReason"] as? String == "shop")
            #expect(server.gateway.unlinkedTokens == [token], "the shop's end unlinks the merchant token at Apple")
            let late = try await server.api("POST", "/v1/mandates/\(mandateId)/charges", key: key, json: charge, idempotencyKey: "c2")
            #expect(late.status == 409)
            let endedAgain = try await server.api("DELETE", "/v1/mandates/\(mandateId)", key: key)
            #expect(endedAgain.json?["state"] as? String == "ended")
            #expect(server.gateway.unlinkedTokens == [token], "ending twice unlinks once")

            let expected = ["payment.authorized", "mandate.created", "payment.authorized", "payment.authorized", "mandate.ended"]
            let seen = try await receiver.wait { $0.count >= expected.count }
            #expect(seen.map(\.type) == expected)
            #expect(seen.allSatisfy { $0.verified })
        }
    }

    @Test(
        "Apple's notifications: an unknown event gets 200 and changes nothing; card art updates, UNLINK ends the mandate, in the background"
    )
    func tokenEvents() async throws {
        // Live: Apple's notification comes from the mock gateway over a socket.
        try await PaymentsAPITests.with(transport: .live) { server in
            let key = try await server.apiKey()
            let token = "DNITHE000000000000000002"
            let (_, payment) = try await Self.payRecurring(server, key: key, token: token)
            let mandateId = try #require(payment["mandateId"] as? String)
            let base = "http://127.0.0.1:\(server.port)/apple-pay/token-events/\(TestMaterial.merchantIdentifier)"
            let eventsBefore = try await server.store.webhookEvents(merchantIdentifier: nil, state: nil, limit: 50).count

            // Recorded and answered at once; the event is fetched in the background.
            #expect(try await server.gateway.notify(tokenNotificationURL: base, eventId: "no-such-event") == 200)
            let asked = try await Eventually.until {
                try await server.store.tokenEvent(merchantIdentifier: TestMaterial.merchantIdentifier, eventId: "no-such-event")?.state
                    == .unknown
            }
            #expect(asked, "Orchard asked Apple, which does not know it")
            #expect(server.gateway.tokenEventFetches == ["no-such-event"])
            #expect(try await server.gateway.notify(tokenNotificationURL: base, eventId: "bad%20id") == 200)
            #expect(
                try await server.store.tokenEvent(merchantIdentifier: TestMaterial.merchantIdentifier, eventId: "bad id") == nil,
                "an ID Apple never sends is not recorded, so never asked for")
            let stranger = "http://127.0.0.1:\(server.port)/apple-pay/token-events/merchant.unknown"
            #expect(try await server.gateway.notify(tokenNotificationURL: stranger, eventId: "e1") == 200)
            #expect(try await server.store.tokenEvent(merchantIdentifier: "merchant.unknown", eventId: "e1") == nil)
            #expect(try await server.store.webhookEvents(merchantIdentifier: nil, state: nil, limit: 50).count == eventsBefore)
            #expect(try await server.store.mandate(id: mandateId)?.state == .active)

            let art = DecryptedPayment.MerchantTokenMetadata(
                cardArt: [.init(name: "new", type: "image/png", url: "https://art.example/new.png")],
                cardMetadata: .init(cardCountry: "FR", expirationDate: "20320131", fpanSuffix: "0005"))
            let updateId = server.gateway.addTokenEvent(eventType: "UPDATED_CARD_ART", merchantTokenIdentifier: token, metadata: art)
            #expect(try await server.gateway.notify(tokenNotificationURL: base, eventId: updateId) == 200)
            #expect(try await Eventually.until { try await server.store.mandate(id: mandateId)?.merchantTokenMetadata == art })
            let updated = try #require(try await server.store.mandate(id: mandateId))
            #expect(updated.state == .active && updated.merchantTokenMetadata == art)

            let unlinkId = server.gateway.addTokenEvent(eventType: "UNLINK", merchantTokenIdentifier: token, reason: "issuer")
            #expect(try await server.gateway.notify(tokenNotificationURL: base, eventId: unlinkId) == 200)
            #expect(try await Eventually.until { try await server.store.mandate(id: mandateId)?.state == .ended })
            let ended = try #require(try await server.store.mandate(id: mandateId))
            #expect(ended.state == .ended && ended.endedReason == "apple:issuer")
            #expect(server.gateway.unlinkedTokens.isEmpty, "a token Apple unlinked is not unlinked again")
            let types = try await server.store.webhookEvents(merchantIdentifier: nil, state: nil, limit: 50).prefix(2).map(\.type)
            #expect(Array(types.reversed()) == [.mandateUpdated, .mandateEnded])
            let charge = try await server.api(
                "POST", "/v1/mandates/\(mandateId)/charges", key: key, json: #"{"amount": 990, "reference": "inv-9"}"#, idempotencyKey: "c9"
            )
            #expect(charge.status == 409)
        }
    }
}
