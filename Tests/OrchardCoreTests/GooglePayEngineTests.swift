import ApplePay
import Crypto
import Foundation
import GooglePay
import OrchardCore
import OrchardTesting
import Synchronization
import Testing

/// Google Pay through the same engine: the token verified for the merchant's recipient, claimed
/// once by its signed message, bound to the order's price version, and handed to the processor
/// unchanged (gateway mode) or as decrypted (direct mode).
@Suite("Payments engine: Google Pay")
struct GooglePayEngineTests {
    static let gatewayKey = P256.KeyAgreement.PrivateKey()
    static let minter = GooglePayMinter()

    /// The bench's engine with Google Pay settings for the bench's merchant, and a processor that
    /// keeps what it was handed.
    struct Bench {
        var bench: EngineBench
        let processor: CapturingProcessor
        let engine: PaymentsEngine

        init(_ settings: GooglePaySettings?) throws {
            bench = try EngineBench()
            processor = CapturingProcessor(inner: bench.processor)
            engine = PaymentsEngine(
                orderPayments: bench.repositories.orderPayments, refunds: bench.repositories.refunds,
                mandates: bench.repositories.mandates, processors: PaymentProcessors(byMerchant: [EngineBench.merchant: processor]),
                verifier: TokenVerifier(root: EngineBench.tokenChain.root.certificate),
                decryptors: [EngineBench.merchant: TokenDecryptor(keys: [EngineBench.orchardHeldKey])],
                googlePay: settings.map { [EngineBench.merchant: $0] } ?? [:], vault: bench.vault, time: bench.clock.source,
                policy: bench.policy)
        }

        func pay(_ order: OrderRecord, _ method: GooglePayPaymentMethod, priceVersion: Int? = 1) async -> Result<
            PaymentRecord, CoreError
        > {
            do {
                return .success(
                    try await engine.authorize(
                        .init(
                            merchantIdentifier: EngineBench.merchant, orderId: order.id,
                            wallet: .googlePay(method, priceVersion: priceVersion))))
            } catch {
                return .failure(error)
            }
        }
    }

    static func gatewaySettings(minter: GooglePayMinter = minter) throws -> GooglePaySettings {
        GooglePaySettings(
            merchantId: nil, merchantName: "Orchard test", environment: .test, mode: .gateway(name: "worldpay", merchantId: "gw-merchant"),
            allowedCardNetworks: ["VISA"], allowedAuthMethods: ["CRYPTOGRAM_3DS"],
            signingKeys: try GooglePaySigningKeys.parse(minter.rootKeysJSON), recipientId: "gateway:worldpay")
    }

    /// A token as Google's API gives it, sealed for `recipient` to the gateway's key.
    static func method(
        recipient: String = "gateway:worldpay", minter: GooglePayMinter = minter, expiration: Date = Date().addingTimeInterval(3600)
    ) throws -> GooglePayPaymentMethod {
        let payload = GooglePayMinter.paymentData(cryptogram: "AgAAAAAAAIR8CQrXcIhbQAAAAAA=", expiration: expiration)
        let token = String(decoding: try minter.mint(payload, recipientId: recipient, to: gatewayKey.publicKey), as: UTF8.self)
        return try GooglePayPaymentMethod(
            token: token, parsed: GooglePayToken.parse(Array(token.utf8)), cardNetwork: "VISA", cardDetails: "1111")
    }

    @Test("gateway mode: the token verifies, the order is charged its server total, and the processor gets the token string unchanged")
    func gatewayPays() async throws {
        let bench = try Bench(try Self.gatewaySettings())
        let order = try await bench.bench.order()
        let method = try Self.method()
        let paid = try await bench.pay(order, method).get()
        #expect(paid.state == .authorized && paid.amount == order.priced.total && paid.lastFour == "1111" && paid.network == "VISA")
        #expect(paid.transactionId == "googlepay:" + method.claimKey)
        let sent = try #require(bench.processor.requests.first)
        guard case .googlePay(let handed, let decrypted) = sent.wallet else {
            Issue.record("the processor was handed \(sent.wallet), not Google Pay")
            return
        }
        #expect(handed.token == method.token && decrypted == nil)
        #expect(sent.order.priced.total == order.priced.total)
    }

    @Test("the same token again, for its order or another, is refused before anything is sent, whatever price version it names")
    func replayRefused() async throws {
        let bench = try Bench(try Self.gatewaySettings())
        let first = try await bench.bench.order()
        let other = try await bench.bench.order()
        let method = try Self.method()
        _ = try await bench.pay(first, method).get()
        #expect(await bench.pay(first, method).failureCode == .replayedPayment)
        #expect(await bench.pay(other, method).failureCode == .replayedPayment)
        #expect(await bench.pay(first, method, priceVersion: 7).failureCode == .replayedPayment)
        #expect(bench.processor.requests.count == 1)
        #expect(try await bench.bench.store.order(id: other.id)?.state == .open)
    }

    @Test("a price version the order no longer has is refused, nothing sent, and the order stays open")
    func repricedRefused() async throws {
        let bench = try Bench(try Self.gatewaySettings())
        let order = try await bench.bench.order()
        #expect(await bench.pay(order, try Self.method(), priceVersion: 2).failureCode == .orderChanged)
        #expect(bench.processor.requests.isEmpty)
        #expect(try await bench.bench.store.order(id: order.id)?.state == .open)
        // The refused token was not claimed: the shopper pays with the sheet's right version.
        #expect(try await bench.pay(order, try Self.method(), priceVersion: 1).get().state == .authorized)
    }

    @Test(
        "refused with nothing sent: another recipient, an untrusted root, an expired intermediate, a tampered signature, a merchant without Google Pay",
        arguments: ["recipient", "root", "intermediate", "signature", "merchant"])
    func refusals(_ case: String) async throws {
        let bench = try Bench(`case` == "merchant" ? nil : try Self.gatewaySettings())
        let order = try await bench.bench.order()
        var method: GooglePayPaymentMethod
        var reason: String
        switch `case` {
        case "recipient": (method, reason) = (try Self.method(recipient: "gateway:another"), "invalidSignature")
        case "root": (method, reason) = (try Self.method(minter: GooglePayMinter()), "untrustedIntermediateKey")
        case "intermediate":
            let expired = GooglePayMinter(
                root: Self.minter.root, intermediate: .init(), intermediateExpiration: Date().addingTimeInterval(-60))
            (method, reason) = (try Self.method(minter: expired), "intermediateKeyExpired")
        case "signature":
            method = try Self.method()
            var signature = Array(Data(base64Encoded: method.parsed.signature) ?? Data())
            signature[signature.count - 1] ^= 0x01
            method.parsed.signature = Data(signature).base64EncodedString()
            reason = "invalidSignature"
        default: (method, reason) = (try Self.method(), "does not take Google Pay")
        }
        let refusal = await bench.pay(order, method)
        guard case .failure(let error) = refusal else {
            Issue.record("\(`case`): paid")
            return
        }
        #expect(error.code == .invalidToken && error.message.contains(reason), "\(`case`): \(error.message)")
        #expect(bench.processor.requests.isEmpty)
    }

    @Test("an unknown Google Pay payment is re-sent by the reconciler with the same token under the same reference")
    func reconcilerResends() async throws {
        let bench = try Bench(try Self.gatewaySettings())
        let order = try await bench.bench.order()
        let method = try Self.method()
        bench.bench.processor.script([.dropAfterCharge])
        #expect(await bench.pay(order, method).failureCode == .paymentUnknown)
        bench.bench.processor.lookups.withLock { $0 = { _ in .notFound(lag: 0) } }
        bench.bench.clock.advance(3600)
        _ = await bench.engine.reconcile()
        #expect(bench.processor.requests.count == 2)
        let resent = try #require(bench.processor.requests.last)
        guard case .googlePay(let handed, nil) = resent.wallet else {
            Issue.record("re-sent \(resent.wallet)")
            return
        }
        #expect(handed.token == method.token && resent.reference == "\(order.id)-1")
        #expect(bench.bench.processor.charges == ["\(order.id)-1"])
    }
}

/// Google's own fixed ECv2 tokens (Tink's, via yoyowallet's tests; see GooglePayTests/Fixtures)
/// sent to a direct-mode merchant holding their recipient's key.
@Suite("Payments engine: Google Pay direct mode")
struct GooglePayDirectEngineTests {
    struct Fixture: Decodable {
        var rootSigningKeys: JSONValue
        var recipientId: String
        var privateKeyPKCS8: String
        var tokens: [String: JSONValue]
    }

    static let fixture: Fixture = {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("GooglePayTests/Fixtures/tink-ecv2-tokens.json")
        return try! JSONDecoder().decode(Fixture.self, from: Data(contentsOf: url))
    }()

    static func settings(authMethods: [String] = ["PAN_ONLY", "CRYPTOGRAM_3DS"]) throws -> GooglePaySettings {
        let der = try #require(Data(base64Encoded: fixture.privateKeyPKCS8))
        let key = try P256.KeyAgreement.PrivateKey(derRepresentation: der)
        return GooglePaySettings(
            merchantId: nil, merchantName: "Orchard test", environment: .test, mode: .direct(keys: [P256.KeyAgreement.PrivateKey(), key]),
            allowedCardNetworks: ["VISA"], allowedAuthMethods: authMethods,
            signingKeys: try GooglePaySigningKeys.parse(Array(JSONEncoder().encode(fixture.rootSigningKeys))),
            recipientId: fixture.recipientId)
    }

    static func method(_ name: String) throws -> GooglePayPaymentMethod {
        let token = String(decoding: try JSONEncoder().encode(try #require(fixture.tokens[name])), as: UTF8.self)
        return GooglePayPaymentMethod(token: token, parsed: try GooglePayToken.parse(Array(token.utf8)))
    }

    @Test("the valid token is opened with the second of two keys and charged; the processor gets the decrypted card, never the token")
    func validDecryptedAndCharged() async throws {
        let bench = try GooglePayEngineTests.Bench(try Self.settings())
        let order = try await bench.bench.order()
        let paid = try await bench.pay(order, try Self.method("valid")).get()
        #expect(paid.state == .authorized && paid.lastFour == "1111")
        let sent = try #require(bench.processor.requests.first)
        guard case .googlePay(_, let decrypted?) = sent.wallet else {
            Issue.record("handed \(sent.wallet)")
            return
        }
        #expect(decrypted.card.pan == "4111111111111111" && decrypted.card.authMethod == .panOnly)
        #expect(!"\(decrypted)".contains("4111111111111111"), "the description redacts the card number")
    }

    @Test(
        "expired, tampered and unreadable tokens are refused with nothing sent",
        arguments: [
            ("messageExpired", "messageExpired"), ("tagInvalid", "tagMismatch"),
            ("intermediateSignatureInvalid", "untrustedIntermediateKey"),
            ("intermediateKeyExpired", "intermediateKeyExpired"), ("plaintextNotJSON", "invalidPlaintext"),
        ])
    func refused(_ name: String, _ reason: String) async throws {
        let bench = try GooglePayEngineTests.Bench(try Self.settings())
        let order = try await bench.bench.order()
        let refusal = await bench.pay(order, try Self.method(name))
        guard case .failure(let error) = refusal else {
            Issue.record("\(name): paid")
            return
        }
        #expect(error.code == .invalidToken && error.message.contains(reason), "\(name): \(error.message)")
        #expect(bench.processor.requests.isEmpty)
    }

    @Test("a PAN_ONLY card is refused where the merchant allows only CRYPTOGRAM_3DS")
    func authMethodRefused() async throws {
        let bench = try GooglePayEngineTests.Bench(try Self.settings(authMethods: ["CRYPTOGRAM_3DS"]))
        let order = try await bench.bench.order()
        let refusal = await bench.pay(order, try Self.method("valid"))
        #expect(refusal.failureCode == .invalidToken)
        #expect(bench.processor.requests.isEmpty)
    }
}

/// The bench's processor, keeping each authorization request it was handed.
final class CapturingProcessor: PaymentProcessor {
    let inner: SimulatedProcessor
    private let handed = Mutex<[AuthorizationRequest]>([])

    init(inner: SimulatedProcessor) { self.inner = inner }

    var requests: [AuthorizationRequest] { handed.withLock { $0 } }
    var name: String { inner.name }

    func authorize(_ request: AuthorizationRequest) async throws -> AuthorizationOutcome {
        handed.withLock { $0.append(request) }
        return try await inner.authorize(request)
    }
    func settle(_ payment: PaymentRecord) async throws(ProcessorActionError) -> [String: String] { try await inner.settle(payment) }
    func cancel(_ payment: PaymentRecord) async throws(ProcessorActionError) { try await inner.cancel(payment) }
    func refund(_ request: RefundRequest) async throws -> RefundOutcome { try await inner.refund(request) }
    func chargeMandate(_ request: MandateChargeRequest) async throws -> AuthorizationOutcome { try await inner.chargeMandate(request) }
    func deleteCredential(_ mandate: MandateRecord) async throws(ProcessorActionError) { try await inner.deleteCredential(mandate) }
    func lookup(_ payment: PaymentRecord) async throws -> PaymentLookup { try await inner.lookup(payment) }
    func lookupRefund(_ refund: RefundRecord, of payment: PaymentRecord) async throws -> RefundLookup {
        try await inner.lookupRefund(refund, of: payment)
    }
}
