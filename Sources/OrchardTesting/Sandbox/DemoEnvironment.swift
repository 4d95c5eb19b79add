import ApplePay
import Crypto
import Foundation
import X509
import _CryptoExtras

/// Files for running Orchard against the mock gateway with no Apple account: a test PKI,
/// a domain association file and a ready server configuration, all in one folder.
///
/// Used by `orchard-sandbox demo`, `orchard-sandbox mock-gateway` and the benchmark.
public struct DemoEnvironment: Sendable {
    public static let merchantIdentifier = "merchant.dev.orchard.demo"
    public static let displayName = "Orchard Demo Shop"
    public static let domains = ["localhost", "127.0.0.1"]

    public let directory: URL
    public let material: TestMaterial

    public var caFile: String { file("test-ca.pem") }
    public var identityCertificateFile: String { file("test-merchant-identity.pem") }
    public var identityKeyFile: String { file("test-merchant-identity.key") }
    public var configurationFile: String { file("orchard.json") }
    public var ecProcessingKeyFile: String { file("test-processing-ec.key") }
    public var rsaProcessingKeyFile: String { file("test-processing-rsa.key") }

    /// The token-signing chain, created on first use.
    public func tokenChain() throws -> TestAppleChain {
        if let chain = try? TestAppleChain.load(from: directory), chain.ecLeaf.certificate.notValidAfter > Date() {
            return chain
        }
        let chain = try TestAppleChain.make()
        try chain.write(to: directory)
        return chain
    }

    /// The merchant's processing keys (EC P-256 and RSA-2048), created on first use.
    public func processingKeys() throws -> (ec: P256.KeyAgreement.PrivateKey, rsa: _RSA.Encryption.PrivateKey) {
        if let ecPEM = try? String(contentsOfFile: ecProcessingKeyFile, encoding: .utf8),
            let rsaPEM = try? String(contentsOfFile: rsaProcessingKeyFile, encoding: .utf8),
            let ec = try? P256.KeyAgreement.PrivateKey(pemRepresentation: ecPEM),
            let rsa = try? _RSA.Encryption.PrivateKey(pemRepresentation: rsaPEM)
        {
            return (ec, rsa)
        }
        let ec = P256.KeyAgreement.PrivateKey()
        let rsa = try _RSA.Encryption.PrivateKey(keySize: .bits2048)
        for (path, pem) in [(ecProcessingKeyFile, ec.pemRepresentation), (rsaProcessingKeyFile, rsa.pemRepresentation)] {
            try Data(pem.utf8).write(to: URL(fileURLWithPath: path))
            try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: path)
        }
        return (ec, rsa)
    }

    /// A file in the demo folder.
    public func file(_ name: String) -> String { directory.appendingPathComponent(name).path }

    /// Uses the test PKI already in `directory`, or creates one.
    public static func prepare(directory path: String) throws -> DemoEnvironment {
        let directory = URL(fileURLWithPath: path).standardizedFileURL
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        try FileManager.default.setAttributes([.posixPermissions: 0o700], ofItemAtPath: directory.path)
        let names = [
            "test-ca.pem", "test-ca.key", "test-gateway.pem", "test-gateway.key", "test-merchant-identity.pem",
            "test-merchant-identity.key",
        ]
        func read(_ name: String) throws -> String {
            try String(contentsOf: directory.appendingPathComponent(name), encoding: .utf8)
        }
        if let texts = try? names.map(read),
            let ca = try? TestCertificate(certificatePEM: texts[0], keyPEM: texts[1]),
            let server = try? TestCertificate(certificatePEM: texts[2], keyPEM: texts[3]),
            let identity = try? TestCertificate(certificatePEM: texts[4], keyPEM: texts[5]),
            [ca, server, identity].allSatisfy({ $0.certificate.notValidAfter > Date().addingTimeInterval(86_400) })
        {
            return DemoEnvironment(directory: directory, material: TestMaterial(pki: TestPKI(ca: ca), server: server, identity: identity))
        }
        let pki = try TestPKI.make()
        let material = TestMaterial(
            pki: pki, server: try pki.issueServerCertificate(),
            identity: try pki.issueMerchantIdentity(merchantIdentifier: merchantIdentifier))
        let environment = DemoEnvironment(directory: directory, material: material)
        try pki.ca.write(certificateTo: environment.file("test-ca.pem"), keyTo: environment.file("test-ca.key"))
        try material.server.write(certificateTo: environment.file("test-gateway.pem"), keyTo: environment.file("test-gateway.key"))
        try material.identity.write(certificateTo: environment.identityCertificateFile, keyTo: environment.identityKeyFile)
        let association = "Orchard demo domain association file: Apple's real one is downloaded from the developer portal.\n"
        try Data(association.utf8).write(to: directory.appendingPathComponent("apple-developer-merchantid-domain-association"))
        return environment
    }

    /// A mock gateway using this environment's certificates and merchant.
    /// With `platform`, it also accepts the demo's platform identity (``platformIdentity()``) for
    /// the Web Merchant Registration API.
    public func makeGateway(host: String = "127.0.0.1", port: Int = 0, faults: MockGatewayFaults = .none, platform: Bool = false)
        throws -> MockAppleGateway
    {
        var merchants = [MockMerchant(merchantIdentifier: Self.merchantIdentifier, domains: Self.domains)]
        if platform { merchants.append(MockMerchant(merchantIdentifier: Self.platformIdentifier, domains: [])) }
        return try MockAppleGateway(
            configuration: .init(
                host: host, port: port, serverIdentity: material.server, clientCA: material.pki.ca.certificate, merchants: merchants,
                faults: faults))
    }

    /// The demo's Worldpay and Worldline test accounts (their secrets go to 0600 files, never into orchard.json).
    public static let worldpayAccount = MockWorldpayAccount(
        entity: "OrchardDemo", username: "orchard-demo", password: "demo-worldpay-password")
    public static let worldlineAccount = MockWorldlineAccount(
        merchantId: "OrchardDemo", apiKeyId: "DEMOKEY", secretApiKey: "demo-worldline-secret")

    /// Mock Worldpay and Worldline on loopback HTTPS with the demo's test server certificate.
    public func makeProcessors(host: String = "127.0.0.1", port: Int = 0) throws -> MockProcessors {
        try MockProcessors(
            serverIdentity: material.server, worldpay: Self.worldpayAccount, worldline: Self.worldlineAccount, host: host, port: port)
    }

    /// Writes a secret into the state folder with mode 0600 and returns its file name.
    func writeSecret(_ name: String, _ value: String) throws -> String {
        let path = file(name)
        guard FileManager.default.createFile(atPath: path, contents: Data(value.utf8), attributes: [.posixPermissions: 0o600]) else {
            throw CocoaError(.fileWriteUnknown, userInfo: [NSFilePathErrorKey: path])
        }
        return name
    }

    /// The demo shop's catalogue, built into the sandbox: written to the state folder on first use.
    public func builtInCatalogue() throws -> String {
        let path = file("catalogue.json")
        if !FileManager.default.fileExists(atPath: path) {
            guard let source = Bundle.module.url(forResource: "demo-catalogue", withExtension: "json") else {
                throw CocoaError(.fileReadNoSuchFile, userInfo: [NSFilePathErrorKey: "demo-catalogue.json"])
            }
            try FileManager.default.copyItem(atPath: source.path, toPath: path)
        }
        return path
    }

    /// The demo's admin token (created on first use, mode 0600): `orchard payments … --token-file` reads it.
    public func adminTokenFile() throws -> String {
        let path = file("admin-token")
        if !FileManager.default.fileExists(atPath: path) {
            _ = try writeSecret("admin-token", (0..<32).map { _ in String(format: "%02x", UInt8.random(in: 0...255)) }.joined())
        }
        return path
    }

    /// Writes `orchard.json` for `orchard serve`, pointed at a mock gateway on `gatewayPort` and,
    /// when `processor` is `worldpay` or `worldline`, at mock processors on `processorPort`; with
    /// `processorHoldsKey`, the merchant's processing key is the mock processor's certificate alone;
    /// with `reconcileEverySecond`, an unknown payment is reconciled a second after it became unknown;
    /// with `platform`, Orchard is a platform integrator with the demo's platform identity; with
    /// `googlePay`, the merchant takes Google Pay in gateway mode through the demo's stand-in `pay.js`.
    @discardableResult
    public func writeServerConfiguration(
        gatewayPort: Int, serverPort: Int, publicDirectory: String?, catalogue: String? = nil, applePaySDK: String? = nil,
        processor: DemoProcessor = .record, processorPort: Int = 0, webhookURL: String? = nil, webhookRotation: Bool = false,
        processorHoldsKey: Bool = false, applePayMode: String? = nil, reconcileEverySecond: Bool = false, platform: Bool = false,
        walletOrders: (webServiceURL: String, apnsPort: Int)? = nil, merchantTokenUsage: String? = nil, googlePay: Bool = false
    ) throws -> String {
        var server: [String: Any] = ["host": "127.0.0.1", "port": serverPort]
        if let publicDirectory { server["publicDirectory"] = publicDirectory }
        var merchant: [String: Any] = [
            "merchantIdentifier": Self.merchantIdentifier,
            "displayName": Self.displayName,
            "domains": Self.domains,
            "identityCertificate": "test-merchant-identity.pem",
            "identityKey": "test-merchant-identity.key",
            "domainAssociationFile": "apple-developer-merchantid-domain-association",
        ]
        var configuration: [String: Any] = [
            "server": server,
            "appleGateway": [
                "baseURL": "https://127.0.0.1:\(gatewayPort)",
                "caFile": "test-ca.pem",
                "allowNonAppleHost": true,
            ],
            "stateDirectory": "state",
            // The demo's domains are this machine's names, never served over https on 443: the
            // guard would report them failing on every start.
            "guard": ["enabled": false],
        ]
        var checkout: [String: Any] = [:]
        if let applePaySDK { checkout["applePaySDK"] = applePaySDK }
        if let applePayMode { checkout["applePayMode"] = applePayMode }
        if !checkout.isEmpty { configuration["checkout"] = checkout }
        if let catalogue {
            // Orders and payments: the test token chain and processing keys, never Apple's.
            _ = try tokenChain()
            _ = try processingKeys()
            merchant["catalogue"] = catalogue
            merchant["processingKeys"] = [["privateKey": "test-processing-ec.key"], ["privateKey": "test-processing-rsa.key"]]
            if processorHoldsKey {
                _ = try processorHeldKey()
                merchant["processingKeys"] = [["certificate": "test-processor-held.pem"]]
            }
            var payments: [String: Any] = ["testTokenRootCertificate": "test-apple-root.pem"]
            if reconcileEverySecond {
                // The defaults (30 s) would make a test of the reconciler wait half a minute.
                payments["reconcileIntervalSeconds"] = 1
                payments["reconcileFirstDelaySeconds"] = 1
            }
            configuration["payments"] = payments
            configuration["admin"] = ["token": try adminTokenFile()]
            if let merchantTokenUsage { merchant["merchantTokenUsage"] = ["webServiceURL": merchantTokenUsage] }
            if googlePay { merchant["googlePay"] = try googlePaySection(processor: processor) }
            let base = "https://127.0.0.1:\(processorPort)"
            switch processor {
            case .worldpay:
                merchant["processor"] = [
                    "type": "worldpay", "baseURL": base, "caFile": "test-ca.pem", "allowNonProductionHost": true,
                    "entity": Self.worldpayAccount.entity, "username": try writeSecret("worldpay-username", Self.worldpayAccount.username),
                    "password": try writeSecret("worldpay-password", Self.worldpayAccount.password), "narrative": "Orchard Demo",
                ]
            case .worldline:
                merchant["processor"] = [
                    "type": "worldline", "baseURL": base, "caFile": "test-ca.pem", "allowNonProductionHost": true,
                    "merchantId": Self.worldlineAccount.merchantId, "apiKeyId": Self.worldlineAccount.apiKeyId,
                    "secretApiKey": try writeSecret("worldline-secret", Self.worldlineAccount.secretApiKey),
                ]
            case .record:
                break
            }
        }
        if let webhookURL {
            // A fresh signing secret beside the configuration, for the shop's receiver to read: the
            // whsec_ kind docs/shop-integration.md tells shops to make, which `Webhook(secret)` reads.
            let key = Data((0..<32).map { _ in UInt8.random(in: 0...255) }).base64EncodedString()
            var webhook = ["url": webhookURL, "secret": try writeSecret("webhook-secret", "whsec_" + key)]
            if webhookRotation {
                // Mid-rotation from the older, unprefixed kind of secret, which deliveries are signed with too.
                webhook["previousSecret"] = try writeSecret(
                    "webhook-previous-secret", Hex.encode((0..<32).map { _ in UInt8.random(in: 0...255) }))
            }
            merchant["webhook"] = webhook
            configuration["webhooks"] = ["firstRetrySeconds": 1, "maximumRetrySeconds": 5, "pollIntervalMilliseconds": 200]
        }
        if platform {
            configuration["platformIntegrator"] = try platformSection()
            configuration["admin"] = ["token": try adminTokenFile()]
        }
        if let walletOrders {
            merchant["walletOrders"] = try walletOrdersSection(webServiceURL: walletOrders.webServiceURL, apnsPort: walletOrders.apnsPort)
        }
        configuration["merchants"] = [merchant]
        let data = try JSONSerialization.data(
            withJSONObject: configuration, options: [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes])
        try data.write(to: URL(fileURLWithPath: configurationFile))
        return configurationFile
    }
}

/// Where the demo's payments go: the database only, or a mock processor started beside the gateway.
public enum DemoProcessor: String, CaseIterable, Sendable {
    case record, worldpay, worldline
}
