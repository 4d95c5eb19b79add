import Crypto
import Foundation
import GooglePay
import OrchardCore
import OrchardTesting
import ProcessorClients
import Testing

/// The real Worldpay and Worldline clients send Google Pay payments to the mock processors in
/// each form: the token string unchanged (gateway mode), a device token with its cryptogram, and a
/// `PAN_ONLY` card (direct mode); and Worldline names its Google Pay gateway.
@Suite("Processor clients: Google Pay")
struct GooglePayProcessorTests {
    static let kinds: [MockProcessorSetup.Kind] = [.worldpay, .worldlineEncrypted]

    /// A gateway-mode token (its contents are the gateway's business: the mock holds no key here).
    static func method() throws -> GooglePayPaymentMethod {
        let payload = GooglePayMinter.paymentData(expiration: Date().addingTimeInterval(3600))
        let token = String(
            decoding: try GooglePayMinter().mint(payload, recipientId: "gateway:worldpay", to: P256.KeyAgreement.PrivateKey().publicKey),
            as: UTF8.self)
        return GooglePayPaymentMethod(token: token, parsed: try GooglePayToken.parse(Array(token.utf8)), cardNetwork: "VISA")
    }

    static func decrypted(cryptogram: String?) throws -> GooglePayPaymentData {
        try ECv2.paymentData(
            GooglePayMinter.paymentData(
                pan: "4895370012003478", month: 3, year: 2031, cryptogram: cryptogram, expiration: Date().addingTimeInterval(3600)))
    }

    static func request(_ wallet: WalletCredential) -> AuthorizationRequest {
        AuthorizationRequest(order: MandateFixture.order(total: 2490), wallet: wallet, reference: "gp-\(UUID().uuidString.prefix(8))")
    }

    @Test(
        "gateway mode: the token string arrives byte for byte, as card/wallet+googlepay or product 320's encryptedPaymentData",
        arguments: kinds)
    func gateway(kind: MockProcessorSetup.Kind) async throws {
        try await MandateFixture.with(kind) { fixture in
            let method = try Self.method()
            let outcome = try await fixture.processor.authorize(Self.request(.googlePay(method, decrypted: nil)))
            #expect(outcome.status == .authorized)
            let received = try #require(fixture.mock.googlePayPayments.last)
            #expect(received.token == method.token)
            #expect(received.form == (kind == .worldpay ? "card/wallet+googlepay" : "encryptedPaymentData"))
            let (_, body) = try fixture.lastSent()
            if kind == .worldpay {
                let instrument = (body["instruction"] as? [String: Any])?["paymentInstrument"] as? [String: Any]
                #expect(same(instrument, ["type": "card/wallet+googlepay", "walletToken": method.token]))
            } else {
                let input = body["mobilePaymentMethodSpecificInput"] as? [String: Any]
                #expect(input?["paymentProductId"] as? Int == 320 && input?["encryptedPaymentData"] as? String == method.token)
            }
        }
    }

    @Test(
        "direct mode: a device token with its cryptogram and ECI, and a PAN_ONLY card, in each processor's decrypted form", arguments: kinds
    )
    func direct(kind: MockProcessorSetup.Kind) async throws {
        try await MandateFixture.with(kind) { fixture in
            for cryptogram in ["AgAAAAAAAIR8CQrXcIhbQAAAAAA=", nil] as [String?] {
                let outcome = try await fixture.processor.authorize(
                    Self.request(.googlePay(try Self.method(), decrypted: try Self.decrypted(cryptogram: cryptogram))))
                #expect(outcome.status == .authorized, "\(cryptogram == nil ? "PAN_ONLY" : "CRYPTOGRAM_3DS")")
                let (_, body) = try fixture.lastSent()
                let received = try #require(fixture.mock.googlePayPayments.last)
                #expect(received.token == nil)
                switch (kind, cryptogram) {
                case (.worldpay, .some(let cryptogram)):
                    #expect(received.form == "card/networkToken+googlepay")
                    let instrument = (body["instruction"] as? [String: Any])?["paymentInstrument"] as? [String: Any]
                    #expect(
                        same(
                            instrument,
                            [
                                "type": "card/networkToken+googlepay", "tokenNumber": "4895370012003478",
                                "expiryDate": ["month": 3, "year": 2031], "cryptogram": cryptogram, "eci": "05",
                            ]))
                case (.worldpay, nil):
                    #expect(received.form == "card/plain")
                    let instrument = (body["instruction"] as? [String: Any])?["paymentInstrument"] as? [String: Any]
                    #expect(
                        same(
                            instrument, ["type": "card/plain", "cardNumber": "4895370012003478", "expiryDate": ["month": 3, "year": 2031]]))
                case (_, .some(let cryptogram)):
                    let data = (body["mobilePaymentMethodSpecificInput"] as? [String: Any])?["decryptedPaymentData"]
                    #expect(
                        same(
                            data,
                            [
                                "paymentMethod": "TOKENIZED_CARD", "dpan": "4895370012003478", "cryptogram": cryptogram, "eci": "05",
                                "expiryDate": "0331",
                            ]))
                case (_, nil):
                    let data = (body["mobilePaymentMethodSpecificInput"] as? [String: Any])?["decryptedPaymentData"]
                    #expect(same(data, ["paymentMethod": "CARD", "pan": "4895370012003478", "expiryDate": "0331"]))
                }
            }
        }
    }

    @Test("Worldline names its Google Pay gateway through GetPaymentProduct 320, signed with the query")
    func worldlineGateway() async throws {
        try await MandateFixture.with(.worldlineEncrypted) { fixture in
            let answering = try #require(fixture.processor as? any GooglePayGatewayAnswering)
            #expect(try await answering.googlePayGateway(countryCode: "NL", currencyCode: "EUR") == "worldlinedirect")
            let (sent, _) = (try #require(fixture.mock.received.last), ())
            #expect(sent.method == "GET" && sent.path == "/v2/\(MockProcessorSetup.worldline.merchantId)/products/320")
        }
    }
}
