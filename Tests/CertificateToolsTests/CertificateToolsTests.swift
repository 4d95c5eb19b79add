import ApplePay
import CertificateTools
import Crypto
import Foundation
import OrchardTesting
import SwiftASN1
import Testing
import X509
import _CryptoExtras

/// Apple's real processing certificate and key from the published vectors (see Tests/ApplePayTests/Fixtures/README.md).
enum AppleFixture {
    static let folder = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("ApplePayTests/Fixtures/basis-theory-rsa")
    static var certificatePath: String { folder.appendingPathComponent("apple_pay.pem").path }
    static var keyPath: String { folder.appendingPathComponent("private.key").path }
    static let signedAt = Date(timeIntervalSince1970: 1_735_689_600)  // 2025-01-01, inside its validity
}

/// Runs the system `openssl` (CI installs it) to build PKCS#12 files the way other tools do.
func openssl(_ arguments: [String]) async throws {
    guard try await OrchardProcess.tool("openssl", arguments).status == 0 else {
        throw CertificateToolError("openssl \(arguments.first ?? "") failed")
    }
}

@Suite("orchard certs: CSRs, Apple .cer import, and inspection of PEM, DER and PKCS#12")
struct CertificateToolsTests {
    @Test("identity CSR: RSA-2048, signed, subject CN = merchant ID; processing CSR: EC P-256 usable as a processing key")
    func csrs() async throws {
        let identity = try CertificateRequests.make(kind: .identity, merchantIdentifier: "merchant.com.example.shop")
        let identityCSR = try CertificateSigningRequest(pemEncoded: identity.csrPEM)
        #expect(_RSA.Signing.PublicKey(identityCSR.publicKey)?.keySizeInBits == 2048)
        #expect(identityCSR.subject.description == "CN=merchant.com.example.shop")
        #expect(identityCSR.publicKey.isValidSignature(identityCSR.signature, for: identityCSR))
        #expect(try Certificate.PrivateKey(pemEncoded: identity.keyPEM).publicKey == identityCSR.publicKey)

        let processing = try CertificateRequests.make(kind: .processing, merchantIdentifier: "merchant.com.example.shop")
        let processingCSR = try CertificateSigningRequest(pemEncoded: processing.csrPEM)
        #expect(P256.Signing.PublicKey(processingCSR.publicKey) != nil)
        #expect(processingCSR.publicKey.isValidSignature(processingCSR.signature, for: processingCSR))
        let key = try ProcessingKey(privateKeyPEM: processing.keyPEM, merchantIdentifier: "merchant.com.example.shop")
        #expect(key.publicKeyHash.count == 32)
    }

    @Test(
        "order type: an RSA-2048 CSR for the Order Type ID; the certificate Apple issues for it is inspected as orderType, a merchant identity as identity"
    )
    func orderType() throws {
        let made = try CertificateRequests.make(kind: .orderType, merchantIdentifier: "order.com.example.shop")
        let csr = try CertificateSigningRequest(pemEncoded: made.csrPEM)
        #expect(_RSA.Signing.PublicKey(csr.publicKey)?.keySizeInBits == 2048)
        #expect(csr.subject.description == "CN=order.com.example.shop")
        let pki = TestMaterial.shared.pki
        let issued = try pki.issueOrderTypeIdentity(orderTypeIdentifier: "order.com.example.shop")
        #expect(CertificateInspector.kind(of: issued.leaf.certificate) == .orderType)
        #expect(CertificateInspector.report(issued.leaf.certificate, at: Date()).kind == .orderType)
        #expect(CertificateInspector.kind(of: TestMaterial.shared.identity.certificate) == .identity)
        #expect(CertificateInspector.kind(of: issued.intermediate.certificate) == .other)
    }

    @Test("import: Apple's DER .cer becomes PEM with its own key, and is refused with another key")
    func importCertificate() async throws {
        let made = try CertificateRequests.make(kind: .processing, merchantIdentifier: "merchant.com.example.shop")
        let csr = try CertificateSigningRequest(pemEncoded: made.csrPEM)
        // The test CA plays Apple: it signs the CSR's key.
        let issued = try TestMaterial.shared.pki.issueProcessingCertificate(
            merchantIdentifier: "merchant.com.example.shop", publicKey: csr.publicKey)
        var serializer = DER.Serializer()
        try serializer.serialize(issued)
        let imported = try CertificateRequests.importCertificate(serializer.serializedBytes, keyPEM: made.keyPEM)
        #expect(try Certificate(pemEncoded: imported.pem) == issued)
        _ = try ProcessingKey(privateKeyPEM: made.keyPEM, certificatePEM: imported.pem)

        let other = try CertificateRequests.make(kind: .processing, merchantIdentifier: "merchant.com.example.shop")
        #expect {
            try CertificateRequests.importCertificate(serializer.serializedBytes, keyPEM: other.keyPEM)
        } throws: { error in
            (error as? CertificateToolError)?.message.contains("does not match") == true
        }
        #expect(throws: CertificateToolError.self) { try CertificateRequests.importCertificate(Array("junk".utf8), keyPEM: made.keyPEM) }
    }

    @Test("Apple's real processing certificate: kind, merchant ID from UID and extension, RSA-2048, expiry on the given clock")
    func realAppleCertificate() async throws {
        let bytes = Array(try Data(contentsOf: URL(fileURLWithPath: AppleFixture.certificatePath)))
        let report = try CertificateInspector.inspect(bytes, password: nil, at: AppleFixture.signedAt)
        #expect(report.format == "pem")
        let certificate = try #require(report.certificates.first)
        #expect(certificate.kind == .processing)
        #expect(certificate.merchantIdentifier == "merchant.basistheory.sales")
        #expect(certificate.merchantIdentifierHash == MerchantIdentifierExtension.hash(of: "merchant.basistheory.sales"))
        #expect(certificate.merchantIdentifierMatches == true)
        #expect(certificate.keyType == "RSA" && certificate.keyBits == 2048)
        // Apple's real RSA_v1 token to this certificate names exactly this hash.
        #expect(certificate.publicKeyHash == "eJnBcJm15tPVs9R6nI3lUdWnG0VJGAPpivDcn84I+XA=")
        #expect(certificate.issuer.contains("Apple Worldwide Developer Relations CA - G2"))
        #expect(!certificate.expired && certificate.daysLeft > 300)
        let today = try CertificateInspector.inspect(bytes, password: nil, at: Date(timeIntervalSince1970: 1_800_000_000))
        #expect(today.certificates.first?.expired == true)
        #expect((today.certificates.first?.daysLeft ?? 0) < 0)
    }

    @Test(
        "certificates are known by their key usage, not their name: both of Apple's processing subjects, and an identity",
        arguments: TestPKI.ProcessingSubject.allCases)
    func kindByUsage(subject: TestPKI.ProcessingSubject) throws {
        let merchant = "merchant.com.example.shop"
        let key = P256.Signing.PrivateKey()
        let processing = try TestMaterial.shared.pki.issueProcessingCertificate(
            merchantIdentifier: merchant, publicKey: Certificate.PublicKey(key.publicKey), subject: subject)
        #expect(CertificateInspector.kind(of: processing) == .processing)
        let name = try #require(CertificateInspector.commonName(of: processing))
        #expect(name == (subject == .merchantID ? "Merchant ID: \(merchant)" : "Apple Pay Payment Processing:\(merchant)"))
        let report = CertificateInspector.report(processing, at: Date())
        #expect(report.kind == .processing && report.merchantIdentifier == merchant && report.merchantIdentifierMatches == true)
        #expect(report.publicKeyHash == Data(SHA256.hash(data: key.publicKey.derRepresentation)).base64EncodedString())
        #expect(CertificateInspector.report(TestMaterial.shared.identity.certificate, at: Date()).publicKeyHash == nil)
        // The identity certificate carries the same `Merchant ID:` name; client authentication tells it apart.
        let identity = TestMaterial.shared.identity.certificate
        #expect(CertificateInspector.commonName(of: identity)?.hasPrefix("Merchant ID: ") == true)
        #expect(CertificateInspector.kind(of: identity) == .identity)
        // Apple's real one (named `Apple Pay Payment Processing:`) agrees.
        let real = try Certificate(pemEncoded: String(contentsOfFile: AppleFixture.certificatePath, encoding: .utf8))
        #expect(CertificateInspector.kind(of: real) == .processing)
    }

    @Test("PEM with a key reports whether it matches; DER works; encrypted keys and CSRs get a note; junk is refused")
    func pemVariants() async throws {
        let identity = TestMaterial.shared.identity
        let pem = Array((try identity.certificatePEM + "\n" + identity.keyPEM).utf8)
        let report = try CertificateInspector.inspect(pem, password: nil, at: Date())
        #expect(report.certificates.first?.kind == .identity)
        #expect(report.certificates.first?.merchantIdentifierHash == MerchantIdentifierExtension.hash(of: TestMaterial.merchantIdentifier))
        #expect(report.privateKey == PrivateKeyReport(type: "RSA", bits: 2048, matchesCertificate: true))

        let mismatched = Array((try identity.certificatePEM + "\n" + P256.Signing.PrivateKey().pemRepresentation).utf8)
        #expect(try CertificateInspector.inspect(mismatched, password: nil, at: Date()).privateKey?.matchesCertificate == false)

        var serializer = DER.Serializer()
        try serializer.serialize(identity.certificate)
        let der = try CertificateInspector.inspect(serializer.serializedBytes, password: nil, at: Date())
        #expect(der.format == "der")
        #expect(der.certificates.count == 1)

        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        try directory.write("plain.key", Array(P256.Signing.PrivateKey().pemRepresentation.utf8))
        try await openssl([
            "pkcs8", "-topk8", "-v2", "aes-256-cbc", "-passout", "pass:pw", "-in", directory.path("plain.key"), "-out",
            directory.path("encrypted.key"),
        ])
        let encrypted = [UInt8](try Data(contentsOf: directory.url.appendingPathComponent("encrypted.key")))
        #expect(try CertificateInspector.inspect(encrypted, password: nil, at: Date()).notes.first?.contains("encrypted") == true)
        #expect(try CertificateInspector.inspect(encrypted, password: "pw", at: Date()).privateKey?.type == "EC P-256")
        let csr = try CertificateRequests.make(kind: .processing, merchantIdentifier: "merchant.x").csrPEM
        #expect(
            try CertificateInspector.inspect(Array(csr.utf8), password: nil, at: Date()).notes.first?.contains("signing request") == true)
        #expect(throws: CertificateToolError.self) { try CertificateInspector.inspect(Array("hello".utf8), password: nil, at: Date()) }
    }

    @Test(
        "PKCS#12, modern (AES) and legacy (RC2-40 + 3DES, as Keychain exports): certificate, chain and matching key",
        arguments: [false, true])
    func pkcs12(legacy: Bool) async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let folder = directory.url
        let caPath = folder.appendingPathComponent("ca.pem").path
        try Data(TestMaterial.shared.caPEM).write(to: URL(fileURLWithPath: caPath))
        let p12 = folder.appendingPathComponent("apple_pay.p12").path
        try await openssl(
            [
                "pkcs12", "-export", "-in", AppleFixture.certificatePath, "-inkey", AppleFixture.keyPath, "-certfile", caPath, "-out", p12,
                "-passout", "pass:s3cret",
            ] + (legacy ? ["-legacy"] : []))
        let bytes = Array(try Data(contentsOf: URL(fileURLWithPath: p12)))
        let report = try CertificateInspector.inspect(bytes, password: "s3cret", at: AppleFixture.signedAt)
        #expect(report.format == "pkcs12")
        #expect(report.certificates.count == 2)
        #expect(report.certificates.first?.merchantIdentifier == "merchant.basistheory.sales")
        #expect(report.certificates.last?.subject.contains("Orchard Test CA") == true)
        #expect(report.privateKey == PrivateKeyReport(type: "RSA", bits: 2048, matchesCertificate: true))

        #expect {
            try CertificateInspector.inspect(bytes, password: "wrong", at: Date())
        } throws: { ($0 as? CertificateToolError)?.message == "wrong password for the PKCS#12 file" }
        #expect {
            try CertificateInspector.inspect(bytes, password: nil, at: Date())
        } throws: { ($0 as? CertificateToolError)?.message.contains("needs a password") == true }
    }
}
