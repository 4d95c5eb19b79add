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
import ProcessorClients
import SwiftASN1
import Testing
import X509

/// A merchant set up as Worldpay and Worldline document by default: the processor issued the
/// CSR and holds the processing key, and Orchard is given Apple's certificate alone. Orchard
/// checks what it can without the plaintext and forwards the token encrypted; the mock
/// processors decrypt it with the key Orchard never had, which proves it arrived intact.
@Suite("Processing keys the processor holds")
struct ProcessorHeldKeyTests {
    /// The processor's own key pair, and Apple's processing certificate for its public half.
    static let processorKey = P256.Signing.PrivateKey()
    static let agreementKey = try! P256.KeyAgreement.PrivateKey(rawRepresentation: processorKey.rawRepresentation)
    static let certificate = try! TestMaterial.shared.pki.issueProcessingCertificate(
        merchantIdentifier: TestMaterial.merchantIdentifier, publicKey: Certificate.PublicKey(processorKey.publicKey))
    static var certificatePEM: String { try! certificate.serializeAsPEM().pemString }
    /// What the mock processor decrypts with.
    static let heldByMock = try! ProcessingKey(privateKeyPEM: agreementKey.pemRepresentation, certificatePEM: certificatePEM)

    /// Gives the test merchant only the processor's certificate, and the mock its key.
    static func with(
        _ kind: ProcessorFixture.Kind, reconcileEverySecond: Bool = false, _ body: (ProcessorFixture) async throws -> Void
    ) async throws {
        let configure: (inout ConfigurationFile, TemporaryDirectory) async throws -> Void = { file, directory in
            try directory.write("processor-held.pem", Array(certificatePEM.utf8))
            file.merchants[0].processingKeys = [.init(privateKey: nil, certificate: "processor-held.pem")]
        }
        try await ProcessorFixture.with(kind, reconcileEverySecond: reconcileEverySecond, configure: configure) { fixture in
            fixture.mock.heldKeys = [heldByMock]
            try await body(fixture)
        }
    }

    func pay(
        _ fixture: ProcessorFixture, _ order: (id: String, request: [String: Any]), amount: Int = 990,
        to recipient: P256.KeyAgreement.PublicKey = agreementKey.publicKey
    ) async throws -> (status: Int, json: [String: Any]?, body: [UInt8]) {
        let (body, _) = try AuthorizeBody.make(
            order.id, order.request, minter: fixture.minter, at: fixture.clock.now, amount: amount, to: recipient,
            method: .init(displayName: "Visa 0492", network: "Visa", type: "debit"))
        let response = try await fixture.server.send("POST", "/api/apple-pay/authorize", body: body)
        return (response.status, response.json, body)
    }

    @Test(
        "paid end to end: the processor decrypts what Orchard forwarded, and Orchard holds no private key for the merchant",
        arguments: [ProcessorFixture.Kind.worldpay, .worldlineEncrypted])
    func paid(kind: ProcessorFixture.Kind) async throws {
        try await Self.with(kind) { fixture in
            let keys = fixture.server.configuration.merchants[0].processingKeys
            #expect(keys.count == 1 && keys.allSatisfy { $0.processorHeldScheme == .ecV1 }, "no private key was loaded")
            let order = try await fixture.order()
            let paid = try await pay(fixture, order)
            #expect(paid.status == 200 && paid.json?["status"] as? String == "success", "\(String(describing: paid.json))")
            let decrypted = try #require(fixture.mock.decrypted.last)
            #expect(decrypted.fields.transactionAmount == 990 && decrypted.fields.currencyCode == "978")
            #expect(fixture.mock.charges.map(\.state) == [.authorized])
            let payment = try #require(try await fixture.server.store.payments(orderId: order.id).first)
            #expect(payment.state == .authorized && payment.lastFour == "0492" && payment.network == "Visa")
            #expect(payment.merchantTokenIdentifier == nil)
            #expect(try await fixture.server.store.order(id: order.id)?.state == .paid)

            // The same token again: refused before the processor, which is not called again.
            let calls = fixture.mock.received.count
            let replay = try await fixture.server.send("POST", "/api/apple-pay/authorize", body: paid.body)
            #expect(replay.status != 200)
            #expect(fixture.mock.received.count == calls)
        }
    }

    @Test(
        "refused before any processor call: a key the merchant does not list, another order's token",
        arguments: [ProcessorFixture.Kind.worldpay, .worldlineEncrypted])
    func refusedHere(kind: ProcessorFixture.Kind) async throws {
        try await Self.with(kind) { fixture in
            let order = try await fixture.order()
            // Encrypted to the key Orchard used to hold, no longer configured.
            let stranger = try await pay(fixture, order, to: ServerHarness.processingKey.publicKey)
            #expect(stranger.status == 400)
            #expect(
                (stranger.json?["error"] as? [String: Any])?["code"] as? String == "invalid_token", "\(String(describing: stranger.json))")
            // A token bound to another order.
            let other = try await fixture.order()
            let (body, _) = try AuthorizeBody.make(
                other.id, other.request, minter: fixture.minter, at: fixture.clock.now, to: Self.agreementKey.publicKey)
            let json = String(decoding: body, as: UTF8.self).replacingOccurrences(of: other.id, with: order.id)
            let misbound = try await fixture.server.send("POST", "/api/apple-pay/authorize", body: Array(json.utf8))
            #expect(misbound.status == 422, "\(String(describing: misbound.json))")
            #expect((misbound.json?["error"] as? [String: Any])?["code"] as? String == "payment_mismatch")
            #expect(fixture.mock.received.isEmpty, "no processor call")
            #expect(try await fixture.server.store.payments(orderId: order.id).isEmpty)
            #expect(try await fixture.server.store.order(id: order.id)?.state == .open)
        }
    }

    @Test(
        "an amount Orchard cannot read is the processor's to check: it declines, nothing is charged",
        arguments: [ProcessorFixture.Kind.worldpay, .worldlineEncrypted])
    func processorChecksAmount(kind: ProcessorFixture.Kind) async throws {
        try await Self.with(kind) { fixture in
            let order = try await fixture.order()
            let cheap = try await pay(fixture, order, amount: 100)
            #expect(cheap.status == 402 && cheap.json?["status"] as? String == "failure", "\(String(describing: cheap.json))")
            #expect(fixture.mock.charges.map(\.state) == [.refused])
            #expect(try await fixture.server.store.payments(orderId: order.id).map(\.state) == [.refused])
            #expect(try await fixture.server.store.order(id: order.id)?.state == .open)
        }
    }
}

extension ProcessorHeldKeyTests {
    @Test("an unknown outcome is re-sent by the reconciler from the sealed token, still encrypted, under the same reference")
    func reconcilerResendsEncrypted() async throws {
        try await Self.with(.worldlineEncrypted, reconcileEverySecond: true) { fixture in
            fixture.mock.behaviour = .status(503)
            let order = try await fixture.order()
            #expect(try await pay(fixture, order).status == 504)
            fixture.mock.behaviour = .authorize
            let settled = try await Eventually.until {
                try await fixture.server.store.payments(orderId: order.id).first?.state == .authorized
            }
            #expect(settled, "the reconciler re-sent the payment")
            let payment = try #require(try await fixture.server.store.payments(orderId: order.id).first)
            #expect(payment.sends == 2 && payment.reference == "\(order.id)-1")
            let creates = fixture.mock.received.filter { $0.method == "POST" && $0.path.hasSuffix("/payments") }
            #expect(creates.count == 2 && creates.allSatisfy { $0.header("X-GCS-Idempotence-Key") == "\(order.id)-1" })
            let resent = try #require(creates.last.flatMap { try? JSONSerialization.jsonObject(with: Data($0.body)) as? [String: Any] })
            let input = try #require(resent["mobilePaymentMethodSpecificInput"] as? [String: Any])
            #expect(input["encryptedPaymentData"] is String && input["decryptedPaymentData"] == nil)
            #expect(fixture.mock.decrypted.count == 2 && fixture.mock.decrypted.allSatisfy { $0.fields.transactionAmount == 990 })
            #expect(fixture.mock.charges.map(\.state) == [.authorized])
        }
    }

    /// Why `configure`'s configuration is refused at startup, or nil when it loads.
    func refusal(_ configure: (inout ConfigurationFile, TemporaryDirectory) throws -> Void) throws -> String? {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        var file = try ServerHarness.configurationFile(gatewayPort: 9, directory: directory)
        try directory.write("processor-held.pem", Array(Self.certificatePEM.utf8))
        file.merchants[0].processingKeys = [.init(privateKey: nil, certificate: "processor-held.pem")]
        try configure(&file, directory)
        do {
            _ = try ServerConfiguration.resolve(
                file, relativeTo: directory.url.path, environment: ProcessorFixture.environment, processors: ProcessorFactory.drivers)
            return nil
        } catch {
            return error.message
        }
    }

    @Test("configurations that cannot work are refused at startup, with the fix")
    func impossibleConfigurations() throws {
        let record = try refusal { _, _ in }
        #expect(record?.contains("processingKeys[0] is a certificate alone") == true, "\(record ?? "loaded")")
        #expect(record?.contains("record, which calls no processor") == true, "\(record ?? "loaded")")
        let orchardDecrypts = try refusal { file, _ in
            file.merchants[0].processor = ProcessorFixture.processor(.worldlineDecrypted, baseURL: "https://127.0.0.1:9")
        }
        #expect(orchardDecrypts?.contains("decryption is orchard") == true, "\(orchardDecrypts ?? "loaded")")
        #expect(
            try refusal { file, _ in file.merchants[0].processor = ProcessorFixture.processor(.worldpay, baseURL: "https://127.0.0.1:9") }
                == nil)

        // An RSA key (the identity's own, RSA-2048) in a processing certificate: RSA_v1 tokens.
        let rsaCertificate = try TestMaterial.shared.pki.issueProcessingCertificate(
            merchantIdentifier: TestMaterial.merchantIdentifier, publicKey: TestMaterial.shared.identity.certificate.publicKey)
        let rsaRefusal = try refusal { file, directory in
            try directory.write("rsa.pem", Array(try rsaCertificate.serializeAsPEM().pemString.utf8))
            file.merchants[0].processingKeys = [.init(privateKey: nil, certificate: "rsa.pem")]
            file.merchants[0].processor = ProcessorFixture.processor(.worldpay, baseURL: "https://127.0.0.1:9")
        }
        #expect(rsaRefusal?.contains("decrypts EC_v1 tokens only") == true, "\(rsaRefusal ?? "loaded")")

        let stranger = try TestMaterial.shared.pki.issueProcessingCertificate(
            merchantIdentifier: "merchant.com.someone.else", publicKey: Certificate.PublicKey(Self.processorKey.publicKey))
        let otherMerchant = try refusal { file, directory in
            try directory.write("stranger.pem", Array(try stranger.serializeAsPEM().pemString.utf8))
            file.merchants[0].processingKeys = [.init(privateKey: nil, certificate: "stranger.pem")]
            file.merchants[0].processor = ProcessorFixture.processor(.worldpay, baseURL: "https://127.0.0.1:9")
        }
        #expect(otherMerchant?.contains("for another merchant ID") == true, "\(otherMerchant ?? "loaded")")

        let neither = try refusal { file, _ in file.merchants[0].processingKeys = [.init(privateKey: nil)] }
        #expect(neither?.contains("or certificate alone when the processor holds the key") == true, "\(neither ?? "loaded")")
    }
}

extension ProcessorHeldKeyTests {
    @Test("the doctor says the processor holds the key and names the hash its tokens carry; it has nothing to decrypt")
    func doctor() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        var file = try ServerHarness.configurationFile(gatewayPort: 9, directory: directory)
        try directory.write("processor-held.pem", Array(Self.certificatePEM.utf8))
        file.merchants[0].processingKeys = [.init(privateKey: nil, certificate: "processor-held.pem")]
        let report = await Doctor(sessions: nil).check(file: file, folder: directory.url.path, environment: [:])
        let key = try #require(report.checks.first { $0.check == "processing key 1" })
        let hash = Data(Self.heldByMock.publicKeyHash).base64EncodedString()
        #expect(key.passed && key.detail.contains("publicKeyHash \(hash)"), "\(key.detail)")
        #expect(key.detail.contains("the processor holds the private key"), "\(key.detail)")
        #expect(!report.checks.contains { $0.check == Doctor.decryptCheckName(number: 1) })
    }
}

extension ProcessorHeldKeyTests {
    @Test("the shop's iOS app pays through the payments API with a processor-held key too")
    func inApp() async throws {
        try await Self.with(.worldpay) { fixture in
            let key = try await fixture.server.apiKey()
            let request = try await APIPayments.create(fixture.server, key: key, idempotencyKey: "app-held")
            let token = try APIPayments.mint(request.applicationData, to: Self.agreementKey.publicKey)
            let answer = try await fixture.server.api(
                "POST", "/v1/payment-requests/\(request.id)/authorize", key: key, json: try APIPayments.inAppBody(token, .base64))
            #expect(answer.status == 200, "\(String(describing: answer.json))")
            let payment = try #require(answer.json?["payment"] as? [String: Any])
            #expect(payment["state"] as? String == "authorized" && payment["lastFour"] as? String == "0492")
            #expect(fixture.mock.decrypted.last?.fields.transactionAmount == 1990, "the processor decrypted it")
        }
    }
}

extension ProcessorHeldKeyTests {
    @Test("a token the processor cannot decrypt (its key is not the certificate's) is declined there: nothing charged, the order open")
    func processorCannotDecrypt() async throws {
        try await Self.with(.worldpay) { fixture in
            let otherKey = P256.KeyAgreement.PrivateKey()
            let certificate = try TestMaterial.shared.pki.processingCertificatePEM(
                merchantIdentifier: TestMaterial.merchantIdentifier, for: otherKey.publicKey)
            fixture.mock.heldKeys = [try ProcessingKey(privateKeyPEM: otherKey.pemRepresentation, certificatePEM: certificate)]
            let order = try await fixture.order()
            let declined = try await pay(fixture, order)
            #expect(declined.status == 402, "\(String(describing: declined.json))")
            let payment = try #require(try await fixture.server.store.payments(orderId: order.id).first)
            #expect(payment.state == .refused && payment.processorCode == "decryption_failed")
            #expect(fixture.mock.charges.map(\.state) == [.refused] && fixture.mock.decrypted.isEmpty)
            #expect(try await fixture.server.store.order(id: order.id)?.state == .open)
        }
    }
}
