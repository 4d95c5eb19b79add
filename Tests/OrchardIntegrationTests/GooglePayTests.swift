import ApplePay
import Crypto
import CurlClient
import Foundation
import GooglePay
import OrchardConfiguration
import OrchardCore
import OrchardIntegrationTesting
import OrchardServerTesting
import OrchardTesting
import Testing

/// Google Pay through the whole server (issue 49): `POST /api/google-pay/authorize` with tokens
/// our minter signs with a test root the merchant's `signingKeys` names, charged through the mock
/// processors over loopback HTTPS. In gateway mode the mock plays Google Pay's gateway: it holds
/// the key the tokens are sealed to, opens them and keeps each as it arrived; in direct mode
/// Orchard opens them with the merchant's own key and sends what it decrypted.
@Suite("Google Pay through the server to the mock processors")
struct GooglePayTests {
    static let minter = GooglePayMinter()
    static let roots = try! GooglePaySigningKeys.parse(minter.rootKeysJSON)
    /// The key the mock processor holds as Google Pay gateway.
    static let gatewayKey = P256.KeyAgreement.PrivateKey()
    /// A direct-mode merchant's own key, and its ID at Google (recipient `merchant:<ID>`).
    static let directKey = P256.KeyAgreement.PrivateKey()
    static let googleMerchantId = "BCR2DN4TZKZ7LTYR"
    static let gatewayMerchantId = "orchard-test-gateway-merchant"

    /// A server whose merchant takes Google Pay through `kind`, in gateway mode or, with `direct`, with its own key.
    static func with(_ kind: ProcessorFixture.Kind, direct: Bool = false, _ body: (ProcessorFixture) async throws -> Void)
        async throws
    {
        let configure: (inout ConfigurationFile, TemporaryDirectory) async throws -> Void = { file, directory in
            try directory.write("google-pay-keys.json", minter.rootKeysJSON)
            var googlePay = ConfigurationFile.GooglePay(signingKeys: "google-pay-keys.json")
            if direct {
                try directory.write("google-pay-direct.pem", Array(directKey.pemRepresentation.utf8))
                googlePay.merchantId = googleMerchantId
                googlePay.directKeys = ["google-pay-direct.pem"]
            } else {
                googlePay.gateway = kind == .worldpay ? "worldpay" : "worldlinedirect"
                googlePay.gatewayMerchantId = kind == .worldpay ? gatewayMerchantId : ProcessorFixture.worldline.merchantId
            }
            file.merchants[0].googlePay = googlePay
        }
        try await ProcessorFixture.with(kind, configure: configure) { fixture in
            fixture.mock.googlePayGateway = MockGooglePayGateway(
                privateKey: gatewayKey, roots: roots, worldpayMerchantId: gatewayMerchantId)
            try await body(fixture)
        }
    }

    /// A token as Google's servers make one: for the gateway (carrying `gatewayMerchantId`) or for the direct merchant.
    static func token(
        direct: Bool = false, kind: ProcessorFixture.Kind = .worldpay, gatewayMerchantId: String? = nil,
        expiration: Date = Date().addingTimeInterval(3600)
    ) throws -> String {
        let recipientId: String
        let key: P256.KeyAgreement.PublicKey
        var carried: String?
        if direct {
            (recipientId, key) = ("merchant:\(googleMerchantId)", directKey.publicKey)
        } else {
            let gateway = kind == .worldpay ? "worldpay" : "worldlinedirect"
            (recipientId, key) = ("gateway:\(gateway)", gatewayKey.publicKey)
            carried = gatewayMerchantId ?? (kind == .worldpay ? Self.gatewayMerchantId : ProcessorFixture.worldline.merchantId)
        }
        let payload = GooglePayMinter.paymentData(
            cryptogram: "AgAAAAAABk4DWZ4C28yUQAAAAAA=", expiration: expiration, gatewayMerchantId: carried)
        return String(decoding: try minter.mint(payload, recipientId: recipientId, to: key), as: UTF8.self)
    }

    /// The body of `POST /api/google-pay/authorize`: the order, the price version shown, and `PaymentData` as `loadPaymentData` gives it.
    static func body(orderId: String, priceVersion: Int, token: String, direct: Bool = false) throws -> [UInt8] {
        let paymentData: [String: Any] = [
            "apiVersion": 2, "apiVersionMinor": 0,
            "paymentMethodData": [
                "type": "CARD", "description": "Visa •••• 1111", "info": ["cardNetwork": "VISA", "cardDetails": "1111"],
                "tokenizationData": ["type": direct ? "DIRECT" : "PAYMENT_GATEWAY", "token": token],
            ] as [String: Any],
        ]
        return Array(
            try JSONSerialization.data(withJSONObject: ["orderId": orderId, "priceVersion": priceVersion, "paymentData": paymentData]))
    }

    /// A new order of the test catalogue: its ID, price version and total in minor units.
    static func order(_ fixture: ProcessorFixture) async throws -> (id: String, priceVersion: Int, total: Int64) {
        let response = try await fixture.server.send(
            "POST", "/api/orders", body: Array(#"{"items": [{"productId": "apple", "quantity": 2}]}"#.utf8))
        let json = try #require(response.json, "\(response.status)")
        let id = try #require(json["orderId"] as? String)
        let version = try #require(json["priceVersion"] as? Int)
        let stored = try #require(try await fixture.server.store.order(id: id))
        return (id, version, stored.priced.total)
    }

    @Test(
        "gateway mode: paid with the token sent unchanged, which the gateway opens; a replay, and the same token for another order, send nothing",
        arguments: [ProcessorFixture.Kind.worldpay, .worldlineEncrypted])
    func gateway(kind: ProcessorFixture.Kind) async throws {
        try await Self.with(kind) { fixture in
            let order = try await Self.order(fixture)
            let token = try Self.token(kind: kind)
            let body = try Self.body(orderId: order.id, priceVersion: order.priceVersion, token: token)
            let paid = try await fixture.server.send("POST", "/api/google-pay/authorize", body: body)
            #expect(paid.status == 200 && paid.json?["status"] as? String == "success", "\(String(describing: paid.json))")

            let received = try #require(fixture.mock.googlePayPayments.first)
            #expect(fixture.mock.googlePayPayments.count == 1)
            #expect(received.processor == kind.processorName)
            #expect(received.form == (kind == .worldpay ? "card/wallet+googlepay" : "encryptedPaymentData"))
            #expect(received.token == token, "the token's bytes arrived unchanged")
            #expect(received.authMethod == "CRYPTOGRAM_3DS", "the gateway opened it with its key")
            let charge = try #require(fixture.mock.charges.first)
            #expect(fixture.mock.charges.count == 1)
            #expect(charge.state == .authorized && charge.amount == order.total && charge.currency == "EUR")
            let payment = try #require(try await fixture.server.store.payments(orderId: order.id).first)
            #expect(payment.state == .authorized && payment.amount == order.total && payment.lastFour == "1111")
            #expect(try await fixture.server.store.order(id: order.id)?.state == .paid)

            // The same body again, and the same token for another order: refused before the processor.
            let sent = fixture.mock.received.count
            let replay = try await fixture.server.send("POST", "/api/google-pay/authorize", body: body)
            #expect(replay.status == 409, "\(replay.status) \(replay.errorCode ?? "")")
            let other = try await Self.order(fixture)
            let reused = try await fixture.server.send(
                "POST", "/api/google-pay/authorize", body: try Self.body(orderId: other.id, priceVersion: other.priceVersion, token: token))
            #expect(reused.status == 409 && reused.errorCode == "replayed_payment", "\(reused.status) \(reused.errorCode ?? "")")
            #expect(try await fixture.server.store.order(id: other.id)?.state == .open)
            #expect(try await fixture.server.store.payments(orderId: other.id).isEmpty)
            #expect(fixture.mock.received.count == sent, "nothing more reached the processor")
            #expect(fixture.mock.googlePayPayments.count == 1)
        }
    }

    @Test(
        "gateway mode: a token sealed for another gateway merchant, or whose message expired, verifies at Orchard and is declined by the gateway",
        arguments: [ProcessorFixture.Kind.worldpay, .worldlineEncrypted])
    func declinedByTheGateway(kind: ProcessorFixture.Kind) async throws {
        try await Self.with(kind) { fixture in
            // Only the gateway can open a gateway-mode token: what it names and when it expires are its to check.
            let tokens = [
                try Self.token(kind: kind, gatewayMerchantId: "someone-else"),
                try Self.token(kind: kind, expiration: Date(timeIntervalSinceNow: -60)),
            ]
            for token in tokens {
                let order = try await Self.order(fixture)
                let declined = try await fixture.server.send(
                    "POST", "/api/google-pay/authorize",
                    body: try Self.body(orderId: order.id, priceVersion: order.priceVersion, token: token))
                #expect(declined.status == 402 && declined.errorCode == "payment_failed", "\(declined.status) \(declined.errorCode ?? "")")
                #expect(try await fixture.server.store.order(id: order.id)?.state == .open)
            }
            #expect(fixture.mock.googlePayPayments.map(\.token) == tokens, "each sent once, as it was")
            #expect(fixture.mock.googlePayPayments.map(\.authMethod) == ["CRYPTOGRAM_3DS", nil], "the first opened, the second expired")
            #expect(fixture.mock.charges.map(\.state) == [.refused, .refused])
        }
    }

    @Test(
        "direct mode: a valid token is opened by Orchard and charged as decrypted; an expired or tampered one is refused with nothing sent",
        arguments: [ProcessorFixture.Kind.worldpay, .worldlineDecrypted])
    func direct(kind: ProcessorFixture.Kind) async throws {
        try await Self.with(kind, direct: true) { fixture in
            // Expired: its messageExpiration has passed.
            let first = try await Self.order(fixture)
            let expired = try await fixture.server.send(
                "POST", "/api/google-pay/authorize",
                body: try Self.body(
                    orderId: first.id, priceVersion: first.priceVersion,
                    token: try Self.token(direct: true, expiration: Date(timeIntervalSinceNow: -60)),
                    direct: true))
            #expect(expired.status == 400 && expired.errorCode == "invalid_token", "\(expired.status) \(expired.errorCode ?? "")")
            #expect(expired.errorMessage?.contains("messageExpired") == true, "\(expired.errorMessage ?? "")")

            // Tampered: one byte of the signed message changed, so its signature no longer verifies.
            var parsed = try JSONDecoder().decode(GooglePayToken.self, from: Data(try Self.token(direct: true).utf8))
            var message = Array(parsed.signedMessage.utf8)
            let index = try #require(message.firstIndex(of: UInt8(ascii: "\"")).map { $0 + 1 })
            message[index] = message[index] == UInt8(ascii: "a") ? UInt8(ascii: "b") : UInt8(ascii: "a")
            parsed.signedMessage = String(decoding: message, as: UTF8.self)
            let tampered = String(decoding: try JSONEncoder().encode(parsed), as: UTF8.self)
            let refused = try await fixture.server.send(
                "POST", "/api/google-pay/authorize",
                body: try Self.body(orderId: first.id, priceVersion: first.priceVersion, token: tampered, direct: true))
            #expect(refused.status == 400 && refused.errorCode == "invalid_token", "\(refused.status) \(refused.errorCode ?? "")")
            #expect(fixture.mock.received.isEmpty, "neither reached the processor")
            #expect(try await fixture.server.store.payments(orderId: first.id).isEmpty)

            // Valid: opened with the merchant's key, the device token and cryptogram sent, the order paid.
            let token = try Self.token(direct: true)
            let paid = try await fixture.server.send(
                "POST", "/api/google-pay/authorize",
                body: try Self.body(orderId: first.id, priceVersion: first.priceVersion, token: token, direct: true))
            #expect(paid.status == 200 && paid.json?["status"] as? String == "success", "\(String(describing: paid.json))")
            let received = try #require(fixture.mock.googlePayPayments.first)
            #expect(fixture.mock.googlePayPayments.count == 1)
            #expect(received.form == (kind == .worldpay ? "card/networkToken+googlepay" : "decryptedPaymentData"))
            #expect(received.token == nil, "what Orchard decrypted, not the token")
            #expect(fixture.mock.charges.map(\.state) == [.authorized] && fixture.mock.charges.first?.amount == first.total)
            let payment = try #require(try await fixture.server.store.payments(orderId: first.id).first)
            #expect(payment.state == .authorized && payment.lastFour == "1111")
            #expect(try await fixture.server.store.order(id: first.id)?.state == .paid)
        }
    }
}
