import Crypto
import Foundation
import OrchardConfiguration
import OrchardTesting

/// The shared test merchant's configuration: its files (identity, CA, association file, catalogue,
/// processing key, test token root) written to a folder, and the configuration file naming them.
/// The server's harness and the configuration's tests both start from it.
public enum TestConfiguration {
    public static let domain = "shop.example"
    /// Served by Orchard but not registered at the (mock) Apple gateway.
    public static let unregisteredDomain = "unregistered.example"
    /// Bytes no text processing would keep intact.
    public static let associationFile: [UInt8] = Array("7B227073704964223A22\r\n".utf8) + [0x00, 0xFF, 0xFE, 0x0A] + Array("end".utf8)

    public static let processingKey = P256.KeyAgreement.PrivateKey()
    public static let tokenChain = try! TestAppleChain.make()
    public static let catalogueJSON = TestRecords.catalogueJSON

    /// A configuration file for the shared test merchant, written to `directory`.
    public static func file(gatewayPort: Int, directory: TemporaryDirectory, timeoutMilliseconds: Int = 10_000) throws
        -> ConfigurationFile
    {
        let material = TestMaterial.shared
        try material.identity.write(certificateTo: directory.path("identity.pem"), keyTo: directory.path("identity.key"))
        try directory.write("ca.pem", material.caPEM)
        try directory.write("association", associationFile)
        try directory.write("catalogue.json", Array(catalogueJSON.utf8))
        try directory.write("processing.key", Array(processingKey.pemRepresentation.utf8))
        try directory.write("token-root.pem", Array(try tokenChain.root.certificatePEM.utf8))
        var file = ConfigurationFile(
            server: .init(host: "127.0.0.1", port: 0, publicDirectory: nil, maxBodyBytes: 16 * 1024),
            appleGateway: .init(
                baseURL: "https://127.0.0.1:\(gatewayPort)", caFile: "ca.pem", allowNonAppleHost: true,
                // The connect phase includes the mutual TLS handshake, which a loaded CI machine has
                // been seen to take over a second for; only tests of timeouts set short ones.
                connectTimeoutMilliseconds: timeoutMilliseconds, timeoutMilliseconds: timeoutMilliseconds),
            payments: .init(testTokenRootCertificate: "token-root.pem"),
            merchants: [
                .init(
                    merchantIdentifier: TestMaterial.merchantIdentifier, displayName: "Orchard Test Shop",
                    domains: [domain, unregisteredDomain], identityCertificate: "identity.pem", identityKey: "identity.key",
                    domainAssociationFile: "association", catalogue: "catalogue.json",
                    processingKeys: [.init(privateKey: "processing.key")])
            ])
        // The test domains are not this machine's: a guard would look them up in DNS. GuardTests
        // runs it in process against a loopback host.
        file.guard = .init(enabled: false)
        return file
    }

    /// Every rate limit off.
    public static let noLimits = ConfigurationFile.Limits(
        merchantSessions: .init(perClientIP: .init(perMinute: 0), perMerchant: .init(perMinute: 0)),
        orders: .init(perClientIP: .init(perMinute: 0), perMerchant: .init(perMinute: 0)),
        paymentRequests: .init(perClientIP: .init(perMinute: 0), perMerchant: .init(perMinute: 0)))
}
