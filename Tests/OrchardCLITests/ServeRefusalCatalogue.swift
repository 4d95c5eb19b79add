import Crypto
import Foundation
import OrchardTesting
import SwiftASN1
import X509

/// A valid configuration (the demo's, with a catalogue, processing keys, a Worldpay processor and
/// a webhook) and the files the refusal cases point at, all in one folder.
struct RefusalBench {
    let directory: TemporaryDirectory
    let demo: DemoEnvironment
    let base: Data

    static let platformIdentifier = "merchant.dev.orchard.platform"

    init() throws {
        directory = try TemporaryDirectory()
        demo = try DemoEnvironment.prepare(directory: directory.path("demo"))
        let path = try demo.writeServerConfiguration(
            gatewayPort: 1, serverPort: 0, publicDirectory: nil, catalogue: try demo.builtInCatalogue(), processor: .worldpay,
            processorPort: 1, webhookURL: "https://shop.example/orchard/webhooks")
        base = try Data(contentsOf: URL(fileURLWithPath: path))
        try writeFiles()
    }

    func file(_ name: String) -> String { demo.file(name) }

    func write(_ name: String, _ text: String) throws {
        let url = URL(fileURLWithPath: file(name))
        try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        try Data(text.utf8).write(to: url)
    }

    func writePEM(_ name: String, _ certificate: Certificate) throws {
        try write(name, try certificate.serializeAsPEM().pemString + "\n")
    }

    /// The broken and extra files the cases name.
    private func writeFiles() throws {
        let pki = demo.material.pki
        let merchant = DemoEnvironment.merchantIdentifier
        try write("junk.pem", "not a certificate\n")
        try write("short-token", "abc\n")
        try write("empty-secret", "\n")
        try write("webhook-short", "too-short\n")
        try write("webhook-whsec-short", "whsec_" + Data(repeating: 7, count: 8).base64EncodedString() + "\n")
        try write("vault-short/payments.key", "12345")
        try write("public/readme.txt", "no index.html here\n")
        try write("fake-ca.pem", "-----BEGIN CERTIFICATE-----\nbm90IGEgY2VydGlmaWNhdGU=\n-----END CERTIFICATE-----\n")
        try FileManager.default.copyItem(atPath: demo.caFile, toPath: file("db-ca.pem"))
        let catalogue = try String(contentsOfFile: try demo.builtInCatalogue(), encoding: .utf8)
        try write("catalogue-currency.json", catalogue.replacingOccurrences(of: "\"EUR\"", with: "\"ZZZ\""))
        try write("catalogue-shape.json", "[]")
        let platform = try pki.issueMerchantIdentity(merchantIdentifier: Self.platformIdentifier)
        try platform.write(certificateTo: file("platform.pem"), keyTo: file("platform.key"))
        let stranger = try pki.issueMerchantIdentity(merchantIdentifier: Self.platformIdentifier)
        try stranger.write(certificateTo: file("stranger.pem"), keyTo: file("stranger.key"))
        let expired = try pki.issueMerchantIdentity(
            merchantIdentifier: merchant, notValidBefore: Date(timeIntervalSinceNow: -800 * 86_400),
            notValidAfter: Date(timeIntervalSinceNow: -86_400))
        try expired.write(certificateTo: file("expired.pem"), keyTo: file("expired.key"))
        // Processing certificates: one for an RSA key (the identity's), held by the processor;
        // one for another merchant; an expired one and one for another key than the EC key's.
        try writePEM(
            "processing-rsa.pem", try pki.issueProcessingCertificate(merchantIdentifier: merchant, publicKey: expired.certificate.publicKey)
        )
        let ec = try demo.processingKeys().ec.publicKey
        let ecPublic = Certificate.PublicKey(try P256.Signing.PublicKey(rawRepresentation: ec.rawRepresentation))
        try writePEM(
            "processing-other-merchant.pem",
            try pki.issueProcessingCertificate(merchantIdentifier: "merchant.dev.orchard.other", publicKey: ecPublic))
        try writePEM(
            "processing-expired.pem",
            try pki.issueProcessingCertificate(
                merchantIdentifier: merchant, publicKey: ecPublic, notValidBefore: Date(timeIntervalSinceNow: -800 * 86_400),
                notValidAfter: Date(timeIntervalSinceNow: -86_400)))
        try writePEM(
            "platform-processing-held.pem",
            try pki.issueProcessingCertificate(merchantIdentifier: Self.platformIdentifier, publicKey: ecPublic))
        let otherKey = Certificate.PublicKey(P256.Signing.PrivateKey().publicKey)
        try writePEM("processing-other-key.pem", try pki.issueProcessingCertificate(merchantIdentifier: merchant, publicKey: otherKey))
        try writeREADMEFiles()
        try writeOrderTypeFiles()
        try writeGooglePayFiles()
    }

    /// An Order Type ID identity and its intermediate for the demo's merchant, and an expired one.
    private func writeOrderTypeFiles() throws {
        let pki = demo.material.pki
        let valid = try pki.issueOrderTypeIdentity(orderTypeIdentifier: "order.dev.orchard.demo")
        try valid.leaf.write(certificateTo: file("order-type.pem"), keyTo: file("order-type.key"))
        try writePEM("order-type-wwdr.pem", valid.intermediate.certificate)
        let expired = try pki.issueOrderTypeIdentity(
            orderTypeIdentifier: "order.dev.orchard.demo", notValidBefore: Date(timeIntervalSinceNow: -800 * 86_400),
            notValidAfter: Date(timeIntervalSinceNow: -86_400))
        try expired.leaf.write(certificateTo: file("order-type-expired.pem"), keyTo: file("order-type-expired.key"))
        try writePEM("order-type-expired-wwdr.pem", expired.intermediate.certificate)
        try write("logo.txt", "not a PNG\n")
    }

    /// The files the README's example names, made by the test PKI for its merchant.
    private func writeREADMEFiles() throws {
        let pki = demo.material.pki
        let identity = try pki.issueMerchantIdentity(merchantIdentifier: "merchant.com.example.shop")
        try FileManager.default.createDirectory(atPath: file("keys"), withIntermediateDirectories: true)
        try identity.write(certificateTo: file("keys/merchant_id.cer"), keyTo: file("keys/identity.key"))
        try write("keys/apple-developer-merchantid-domain-association", "association\n")
        let key = Certificate.PublicKey(P256.Signing.PrivateKey().publicKey)
        try writePEM(
            "keys/apple_pay.cer", try pki.issueProcessingCertificate(merchantIdentifier: "merchant.com.example.shop", publicKey: key))
    }

    /// PKCS#12 files without a key and without a certificate, made by openssl.
    func writePKCS12Files() async throws {
        let identity = demo.identityCertificateFile
        for (name, arguments) in [
            ("no-key.p12", ["-nokeys", "-in", identity]), ("no-certificate.p12", ["-nocerts", "-inkey", demo.identityKeyFile]),
        ] {
            let result = try await OrchardProcess.tool(
                "openssl", ["pkcs12", "-export"] + arguments + ["-out", file(name), "-passout", "pass:"])
            guard result.status == 0 else { throw CocoaError(.fileWriteUnknown, userInfo: [NSLocalizedDescriptionKey: result.stderr]) }
        }
    }
}

/// One configuration `orchard serve` refuses: the base edited (or raw bytes, or no file at all),
/// and the environment it is given beside the test's own.
struct RefusalCase: Sendable {
    let name: String
    var environment: [String: String] = [:]
    /// The configuration file's bytes; nil: there is no file.
    let contents: @Sendable (RefusalBench) throws -> Data?

    /// The base configuration with `change` applied.
    static func edit(
        _ name: String, environment: [String: String] = [:], _ change: @escaping @Sendable (inout JSONObject, RefusalBench) throws -> Void
    ) -> RefusalCase {
        RefusalCase(name: name, environment: environment) { bench in
            var json = JSONObject(try JSONSerialization.jsonObject(with: bench.base) as? [String: Any] ?? [:])
            try change(&json, bench)
            return try JSONSerialization.data(withJSONObject: json.fields, options: [.sortedKeys, .withoutEscapingSlashes])
        }
    }

    static func raw(_ name: String, environment: [String: String] = [:], _ text: String?) -> RefusalCase {
        RefusalCase(name: name, environment: environment) { _ in text.map { Data($0.utf8) } }
    }
}

/// A JSON object being edited: sections and the first merchant by name.
struct JSONObject {
    var fields: [String: Any]
    init(_ fields: [String: Any]) { self.fields = fields }

    subscript(key: String) -> Any? {
        get { fields[key] }
        set { fields[key] = newValue }
    }

    /// A nested object (made when absent).
    subscript(section key: String) -> JSONObject {
        get { JSONObject(fields[key] as? [String: Any] ?? [:]) }
        set { fields[key] = newValue.fields }
    }

    /// The first merchant.
    var merchant: JSONObject {
        get { JSONObject((fields["merchants"] as? [[String: Any]])?.first ?? [:]) }
        set {
            var merchants = fields["merchants"] as? [[String: Any]] ?? [[:]]
            merchants[0] = newValue.fields
            fields["merchants"] = merchants
        }
    }

    /// Adds a platform integrator that loads (the platform's identity, a settings key) and returns it for editing.
    mutating func addPlatform(_ change: (inout JSONObject) -> Void = { _ in }) {
        var platform = JSONObject([
            "merchantIdentifier": RefusalBench.platformIdentifier, "identityCertificate": "platform.pem", "identityKey": "platform.key",
        ])
        change(&platform)
        self[section: "platformIntegrator"] = platform
    }
}
