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
import SwiftASN1
import Testing
import X509

/// `serve` reads identities and processing keys in every form people have (made at test time
/// by the `openssl` CLI), and says what it found when it is not what goes there.
@Suite("Configuration: keys and certificates in every form")
struct KeyConfigurationTests {
    static let vector = OrchardProcess.repositoryRoot.appendingPathComponent("Tests/ApplePayTests/Fixtures/gala-2021")
    /// The vector's signing time: its processing certificate is valid then.
    static let vectorTime = ISO8601DateFormatter().date(from: "2021-09-01T19:04:00Z")!

    func identityForms(_ directory: TemporaryDirectory) async throws -> [KeyForm] {
        try FileManager.default.createDirectory(atPath: directory.path("identity"), withIntermediateDirectories: true)
        let identity = TestMaterial.shared.identity
        return try await KeyForms.write(
            keyPEM: identity.keyPEM, certificatePEM: identity.certificatePEM, isEC: false, into: directory.path("identity"))
    }

    func use(_ form: KeyForm, for file: inout ConfigurationFile) {
        if form.bundlesCertificate {
            file.merchants[0].identity = .init(pkcs12: form.path, password: "identity/password.txt")
            file.merchants[0].identityCertificate = nil
            file.merchants[0].identityKey = nil
        } else {
            file.merchants[0].identityKey = form.path
            file.merchants[0].identityKeyPassword = form.encrypted ? "identity/password.txt" : nil
        }
    }

    @Test("the identity in every form loads, and PKCS#12 and encrypted keys get merchant sessions over mutual TLS")
    func identityForms() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        var file = try ServerHarness.configurationFile(gatewayPort: 9, directory: directory)
        let forms = try await identityForms(directory)
        #expect(forms.count == 9)
        for form in forms {
            var changed = file
            use(form, for: &changed)
            let configuration = try ServerConfiguration.resolve(changed, relativeTo: directory.url.path, environment: [:])
            #expect(configuration.merchants[0].identity.certificate == TestMaterial.shared.identity.certificate, "\(form)")
        }
        // A DER certificate with a DER key.
        try await KeyForms.openssl([
            "x509", "-in", directory.path("identity.pem"), "-outform", "DER", "-out", directory.path("identity.der"),
        ])
        file.merchants[0].identityCertificate = "identity.der"
        file.merchants[0].identityKey = "identity/pkcs8.der"
        _ = try ServerConfiguration.resolve(file, relativeTo: directory.url.path, environment: [:])

        for name in ["modern.p12", "legacy.p12", "pkcs8-encrypted.pem"] {
            try await ServerHarness.with(configure: { file, directory in
                let form = try #require(try await identityForms(directory).first { $0.name == name })
                use(form, for: &file)
            }) { server in
                let response = try await server.requestSession()
                #expect(response.status == 200, "\(name)")
            }
        }
    }

    @Test("refusals name the file and what it holds instead")
    func refusals() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let base = try ServerHarness.configurationFile(gatewayPort: 9, directory: directory)
        let forms = try await identityForms(directory)
        func refusal(_ change: (inout ConfigurationFile) throws -> Void) throws -> String {
            var file = base
            try change(&file)
            do {
                _ = try ServerConfiguration.resolve(file, relativeTo: directory.url.path, environment: [:])
                return "loaded"
            } catch {
                return error.message
            }
        }
        let encrypted = try #require(forms.first { $0.name == "pkcs8-encrypted.pem" })
        #expect(
            try refusal { $0.merchants[0].identityKey = encrypted.path }
                == "\(encrypted.path): the private key is encrypted: give its password (identityKeyPassword: env:NAME or a file)")
        #expect(
            try refusal { $0.merchants[0].identityKey = "identity.pem" }
                == "\(directory.path("identity.pem")): no private key here: a certificate, not a private key")
        #expect(
            try refusal { $0.merchants[0].identityCertificate = "identity.key" }
                == "\(directory.path("identity.key")): no certificate here: a private key, not a certificate")
        #expect(
            try refusal {
                $0.merchants[0].identityKey = encrypted.path
                $0.merchants[0].identityKeyPassword = "env:WRONG"
            }.contains("environment variable WRONG"))
        #expect(
            try refusal {
                $0.merchants[0].identityKey = "processing.key"
            }
                == "\(directory.path("processing.key")): an EC P-256 key but the certificate \(directory.path("identity.pem")) holds an RSA key"
        )
        let p12 = try #require(forms.first { $0.name == "modern.p12" })
        #expect(
            try refusal { $0.merchants[0].identityKey = p12.path }.hasSuffix(
                "a PKCS#12 (.p12) file: configure it as a PKCS#12 identity with its password"))
        #expect(
            try refusal { $0.merchants[0].identity = .init(pkcs12: p12.path, password: "identity/password.txt") }
                == "identity: give either a PKCS#12 identity or identityCertificate and identityKey, not both")
        // Apple's processing certificate where the identity goes.
        try FileManager.default.copyItem(
            atPath: Self.vector.appendingPathComponent("certificate.pem").path, toPath: directory.path("processing.pem"))
        #expect(
            try refusal { $0.merchants[0].identityCertificate = "processing.pem" }.contains(
                "a Payment Processing certificate (key agreement, not TLS client authentication) where the merchant identity certificate goes"
            ))
        // The identity certificate where the processing one goes.
        #expect(
            try refusal { $0.merchants[0].processingKeys = [.init(privateKey: "identity.key", certificate: "identity.pem")] }
                .contains("a merchant identity certificate (TLS client authentication) where the payment processing certificate goes"))
        // Apple's older processing certificates are named `Merchant ID: <id>`, as identity ones are:
        // each loads where it goes, told apart by its key usage.
        for subject in TestPKI.ProcessingSubject.allCases {
            let key = P256.Signing.PrivateKey()
            let certificate = try TestMaterial.shared.pki.issueProcessingCertificate(
                merchantIdentifier: TestMaterial.merchantIdentifier, publicKey: Certificate.PublicKey(key.publicKey), subject: subject)
            try key.pemRepresentation.write(toFile: directory.path("named.key"), atomically: true, encoding: .utf8)
            try certificate.serializeAsPEM().pemString.write(toFile: directory.path("named.pem"), atomically: true, encoding: .utf8)
            #expect(
                try refusal { $0.merchants[0].processingKeys = [.init(privateKey: "named.key", certificate: "named.pem")] } == "loaded",
                "\(subject)")
            #expect(
                try refusal { $0.merchants[0].identityCertificate = "named.pem" }.contains(
                    "a Payment Processing certificate (key agreement, not TLS client authentication)"), "\(subject)")
        }
    }

    @Test("the real Apple-signed vector decrypts through each processing-key form loaded by serve's configuration")
    func processingKeyForms() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        var file = try ServerHarness.configurationFile(gatewayPort: 9, directory: directory)
        // An identity valid at the vector's time, so the whole configuration loads then.
        let identity = try TestMaterial.shared.pki.issueMerchantIdentity(
            merchantIdentifier: TestMaterial.merchantIdentifier, notValidBefore: Self.vectorTime.addingTimeInterval(-86_400),
            notValidAfter: Self.vectorTime.addingTimeInterval(86_400))
        try identity.write(certificateTo: directory.path("identity.pem"), keyTo: directory.path("identity.key"))
        try FileManager.default.createDirectory(atPath: directory.path("keys"), withIntermediateDirectories: true)
        let forms = try await KeyForms.write(
            keyPEM: try String(contentsOf: Self.vector.appendingPathComponent("private_key.pem"), encoding: .utf8),
            certificatePEM: try String(contentsOf: Self.vector.appendingPathComponent("certificate.pem"), encoding: .utf8), isEC: true,
            into: directory.path("keys"))
        let token = try PaymentToken.parse(Array(try Data(contentsOf: Self.vector.appendingPathComponent("token.json"))))
        let verified = try TokenVerifier().verify(token.paymentData, at: Self.vectorTime)
        let expected = try JSONSerialization.jsonObject(with: Data(contentsOf: Self.vector.appendingPathComponent("expected.json")))
        let plaintext = try #require((expected as? [String: Any])?["plaintext"] as? NSDictionary)
        for form in forms {
            let password = form.encrypted ? "keys/password.txt" : nil
            file.merchants[0].processingKeys = [
                form.bundlesCertificate
                    ? .init(privateKey: nil, password: password, pkcs12: form.path)
                    : .init(privateKey: form.path, certificate: "keys/source.pem", password: password)
            ]
            let configuration = try ServerConfiguration.resolve(
                file, relativeTo: directory.url.path, environment: [:], time: .fixed(Self.vectorTime))
            let payment = try TokenDecryptor(keys: configuration.merchants[0].processingKeys).decrypt(verified.decoded)
            #expect(try JSONSerialization.jsonObject(with: Data(payment.json)) as? NSDictionary == plaintext, "\(form)")
        }
    }
}
