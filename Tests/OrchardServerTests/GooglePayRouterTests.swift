import Crypto
import CurlClient
import Foundation
import GooglePay
import OrchardConfiguration
import OrchardCore
import OrchardInMemory
import OrchardServerTesting
import OrchardTesting
import Testing

/// Google Pay through the router: the page's route and the in-app route, the settings the page
/// and an opened payment request are handed, and the refusals' statuses and codes.
@Suite("Google Pay routes")
struct GooglePayRouterTests {
    static let minter = GooglePayMinter()
    static let gatewayKey = P256.KeyAgreement.PrivateKey()

    /// The test merchant (a `record` processor) taking Google Pay in gateway mode.
    static func configure(_ configuration: inout ServerConfiguration) throws {
        configuration.merchants[0].googlePay = GooglePaySettings(
            merchantId: nil, merchantName: "Orchard Test Shop", environment: .test,
            mode: .gateway(name: "orchard-test", merchantId: "shop-1"), allowedCardNetworks: ["VISA"],
            allowedAuthMethods: ["CRYPTOGRAM_3DS"], signingKeys: try GooglePaySigningKeys.parse(minter.rootKeysJSON),
            recipientId: "gateway:orchard-test")
    }

    /// `loadPaymentData`'s answer around a fresh token sealed for the gateway.
    static func paymentData(recipient: String = "gateway:orchard-test") throws -> [String: Any] {
        let payload = GooglePayMinter.paymentData(
            cryptogram: "AgAAAAAAAIR8CQrXcIhbQAAAAAA=", expiration: Date().addingTimeInterval(3600), gatewayMerchantId: "shop-1")
        let token = String(decoding: try minter.mint(payload, recipientId: recipient, to: gatewayKey.publicKey), as: UTF8.self)
        return [
            "apiVersion": 2, "apiVersionMinor": 0,
            "paymentMethodData": [
                "type": "CARD", "description": "Visa •••• 1111", "info": ["cardNetwork": "VISA", "cardDetails": "1111"],
                "tokenizationData": ["type": "PAYMENT_GATEWAY", "token": token],
            ],
        ]
    }

    static func body(_ object: [String: Any]) throws -> [UInt8] {
        Array(try JSONSerialization.data(withJSONObject: object))
    }

    @Test("the page pays an order at its price version; the same token again, or for another order, is 409 replayed_payment")
    func pagePays() async throws {
        try await RouterHarness.with(configure: Self.configure) { server in
            let checkout = try #require(try await server.send("GET", "/api/checkout").json?["googlePay"] as? [String: Any])
            let methods = try #require(checkout["allowedPaymentMethods"] as? [[String: Any]])
            let specification = try #require(methods.first?["tokenizationSpecification"] as? [String: Any])
            #expect((specification["parameters"] as? [String: String]) == ["gateway": "orchard-test", "gatewayMerchantId": "shop-1"])

            let created = try #require(
                try await server.send("POST", "/api/orders", body: Array(#"{"items": \#(PageCheckout.twoApples)}"#.utf8)).json)
            let orderId = try #require(created["orderId"] as? String)
            #expect(created["priceVersion"] as? Int == 1)
            let data = try Self.paymentData()
            let body = try Self.body(["orderId": orderId, "priceVersion": 1, "paymentData": data])
            let paid = try await server.send("POST", "/api/google-pay/authorize", body: body)
            #expect(paid.status == 200 && paid.json?["status"] as? String == "success", "\(String(describing: paid.json))")
            let payments = try await server.store.payments(orderId: orderId)
            #expect(payments.map(\.state) == [.authorized] && payments.first?.lastFour == "1111" && payments.first?.network == "VISA")

            let replay = try await server.send("POST", "/api/google-pay/authorize", body: body)
            #expect(replay.status == 409 && replay.errorCode == "replayed_payment", "\(String(describing: replay.json))")
            let other = try #require(
                try await server.send("POST", "/api/orders", body: Array(#"{"items": \#(PageCheckout.twoApples)}"#.utf8)).json?["orderId"]
                    as? String)
            let elsewhere = try await server.send(
                "POST", "/api/google-pay/authorize", body: try Self.body(["orderId": other, "priceVersion": 1, "paymentData": data]))
            #expect(elsewhere.status == 409 && elsewhere.errorCode == "replayed_payment")
            #expect(try await server.store.payments(orderId: other).isEmpty)
        }
    }

    @Test(
        "refused: a stale price version (409 order_changed), another recipient and a malformed token (400), a merchant without Google Pay (400)"
    )
    func refusals() async throws {
        try await RouterHarness.with(secondMerchant: true, configure: Self.configure) { server in
            let orderId = try #require(
                try await server.send("POST", "/api/orders", body: Array(#"{"items": \#(PageCheckout.twoApples)}"#.utf8)).json?["orderId"]
                    as? String)
            func pay(_ data: [String: Any], version: Int = 1) async throws -> (Int, String?) {
                let answer = try await server.send(
                    "POST", "/api/google-pay/authorize",
                    body: try Self.body(["orderId": orderId, "priceVersion": version, "paymentData": data]))
                return (answer.status, answer.errorCode)
            }
            #expect(try await pay(try Self.paymentData(), version: 2) == (409, "order_changed"))
            #expect(try await pay(try Self.paymentData(recipient: "gateway:another")) == (400, "invalid_token"))
            var malformed = try Self.paymentData()
            malformed["paymentMethodData"] = ["tokenizationData": ["token": "{\"protocolVersion\": \"ECv1\"}"]]
            #expect(try await pay(malformed) == (400, "invalid_json"))
            for hostile in ["7", "null", "[]", #""x""#] {
                let answer = try await server.send(
                    "POST", "/api/google-pay/authorize",
                    body: Array(
                        #"{"orderId": "\#(orderId)", "priceVersion": 1, "paymentData": {"paymentMethodData": {"tokenizationData": {"token": \#(hostile)}}}}"#
                            .utf8))
                #expect(answer.status == 400 && answer.errorCode == "invalid_json", "\(hostile)")
            }
            #expect(try await server.store.payments(orderId: orderId).isEmpty)
            // And the order is still payable with a good token.
            #expect(try await pay(try Self.paymentData()).0 == 200)
        }
    }

    @Test("an Android app pays a payment request with {\"googlePay\": PaymentData}; the opened request carries the page settings")
    func inApp() async throws {
        try await RouterHarness.with(configure: Self.configure) { server in
            let key = try await server.apiKey()
            let request = try await APIPayments.create(server, key: key, idempotencyKey: "android-1")
            let created = try #require(try await server.api("GET", "/v1/payment-requests/\(request.id)", key: key).json)
            let secret = try #require(created["clientSecret"] as? String)
            let opened = try #require(
                try await server.send("POST", "/api/payment-requests/open", body: Array(#"{"clientSecret": "\#(secret)"}"#.utf8)).json)
            #expect(opened["priceVersion"] as? Int == 1 && (opened["googlePay"] as? [String: Any])?["environment"] as? String == "TEST")

            let body = String(decoding: try Self.body(["googlePay": try Self.paymentData()]), as: UTF8.self)
            let paid = try await server.api("POST", "/v1/payment-requests/\(request.id)/authorize", key: key, json: body)
            #expect(paid.status == 200, "\(String(describing: paid.json))")
            let payment = try #require(paid.json?["payment"] as? [String: Any])
            #expect(payment["state"] as? String == "authorized" && payment["amount"] as? Int == 1990)
            let replay = try await server.api("POST", "/v1/payment-requests/\(request.id)/authorize", key: key, json: body)
            #expect(replay.status == 409)
            let junk = try await server.api("POST", "/v1/payment-requests/\(request.id)/authorize", key: key, json: #"{"googlePay": 7}"#)
            #expect(junk.status == 400 && junk.errorCode == "invalid_json")
        }
    }

    @Test("direct mode over HTTP: Tink's valid token is opened and charged; its expired and tampered tokens are 400 invalid_token")
    func directModeVectors() async throws {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("GooglePayTests/Fixtures/tink-ecv2-tokens.json")
        let fixture = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: url)) as? [String: Any])
        let pkcs8 = try #require(fixture["privateKeyPKCS8"] as? String)
        let key = try P256.KeyAgreement.PrivateKey(derRepresentation: try #require(Data(base64Encoded: pkcs8)))
        let rootsObject = try #require(fixture["rootSigningKeys"])
        let roots = try GooglePaySigningKeys.parse(Array(try JSONSerialization.data(withJSONObject: rootsObject)))
        let recipient = try #require(fixture["recipientId"] as? String)
        let tokens = try #require(fixture["tokens"] as? [String: Any])
        try await RouterHarness.with(configure: { configuration in
            configuration.merchants[0].googlePay = GooglePaySettings(
                merchantId: nil, merchantName: "Orchard Test Shop", environment: .test, mode: .direct(keys: [key]),
                allowedCardNetworks: ["VISA"], allowedAuthMethods: ["PAN_ONLY", "CRYPTOGRAM_3DS"], signingKeys: roots,
                recipientId: recipient)
        }) { server in
            func pay(_ name: String) async throws -> (Int, String?, String) {
                let created = try await server.send("POST", "/api/orders", body: Array(#"{"items": \#(PageCheckout.twoApples)}"#.utf8))
                let orderId = try #require(created.json?["orderId"] as? String)
                let object = try #require(tokens[name])
                let token = String(decoding: try JSONSerialization.data(withJSONObject: object), as: UTF8.self)
                let data: [String: Any] = ["paymentMethodData": ["type": "CARD", "tokenizationData": ["type": "DIRECT", "token": token]]]
                let answer = try await server.send(
                    "POST", "/api/google-pay/authorize", body: try Self.body(["orderId": orderId, "priceVersion": 1, "paymentData": data]))
                return (answer.status, answer.errorCode, orderId)
            }
            let (status, _, paidOrder) = try await pay("valid")
            #expect(status == 200)
            #expect(try await server.store.payments(orderId: paidOrder).map(\.lastFour) == ["1111"])
            for name in ["messageExpired", "tagInvalid", "intermediateSignatureInvalid", "intermediateKeyExpired"] {
                let (status, code, orderId) = try await pay(name)
                #expect(status == 400 && code == "invalid_token", "\(name)")
                #expect(try await server.store.payments(orderId: orderId).isEmpty)
            }
        }
    }
}
