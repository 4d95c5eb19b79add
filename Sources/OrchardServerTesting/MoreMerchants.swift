import ApplePay
import Crypto
import Foundation
import OrchardConfiguration
import OrchardTesting
import SwiftASN1
import X509

/// A second merchant, a platform integrator and an admin token, added to the harness configuration.
public enum MoreMerchants {
    public static let secondDomain = "second.example"
    public static let secondAssociation: [UInt8] = Array("second merchant's association file\n".utf8)
    public static let platformAssociation: [UInt8] = Array("platform integrator's association file\n".utf8)
    public static let secondProcessingKey = P256.KeyAgreement.PrivateKey()
    public static let platformProcessingKey = P256.KeyAgreement.PrivateKey()
    public static let adminToken = "orchard-admin-" + String(repeating: "0123456789abcdef", count: 3)
    public static let environment = ["ORCHARD_ADMIN_TOKEN": adminToken]
    /// The shop's webhook signing secret, in the `whsec_`-less form the payments API's tests use.
    public static let webhookSecret = "whsec-" + String(repeating: "5eb63bbbe01eeed0", count: 3)
    public static var authorization: [(name: String, value: String)] { [(name: "Authorization", value: "Bearer \(adminToken)")] }

    /// The mock gateway's view: the second merchant with its domain, and the platform.
    public static let mockMerchants = [
        MockMerchant(merchantIdentifier: TestMaterial.secondMerchantIdentifier, domains: [secondDomain]),
        MockMerchant(merchantIdentifier: TestMaterial.platformMerchantIdentifier, domains: []),
    ]

    public static func addSecondMerchant(_ file: inout ConfigurationFile, _ directory: TemporaryDirectory) throws {
        try TestMaterial.secondIdentity.write(certificateTo: directory.path("second.pem"), keyTo: directory.path("second.key"))
        try directory.write("second-association", secondAssociation)
        try directory.write("second-processing.key", Array(secondProcessingKey.pemRepresentation.utf8))
        file.merchants.append(
            .init(
                merchantIdentifier: TestMaterial.secondMerchantIdentifier, displayName: "Second Shop", domains: [secondDomain],
                identityCertificate: "second.pem", identityKey: "second.key", domainAssociationFile: "second-association",
                catalogue: "catalogue.json", processingKeys: [.init(privateKey: "second-processing.key")]))
    }

    public static func addPlatform(
        _ file: inout ConfigurationFile, _ directory: TemporaryDirectory, processingCertificateValidUntil: Date? = nil
    ) throws {
        try TestMaterial.platformIdentity.write(certificateTo: directory.path("platform.pem"), keyTo: directory.path("platform.key"))
        try directory.write("platform-association", platformAssociation)
        try directory.write("platform-processing.key", Array(platformProcessingKey.pemRepresentation.utf8))
        var key = ConfigurationFile.ProcessingKeyFile(privateKey: "platform-processing.key")
        if let processingCertificateValidUntil {
            let certificate = try TestMaterial.shared.pki.issueProcessingCertificate(
                merchantIdentifier: TestMaterial.platformMerchantIdentifier,
                publicKey: Certificate.PublicKey(
                    try P256.Signing.PublicKey(rawRepresentation: platformProcessingKey.publicKey.rawRepresentation)),
                notValidBefore: Date(timeIntervalSince1970: 0),
                notValidAfter: processingCertificateValidUntil)
            try directory.write("platform-processing.pem", Array(try certificate.serializeAsPEM().pemString.utf8))
            key.certificate = "platform-processing.pem"
        }
        file.platformIntegrator = .init(
            merchantIdentifier: TestMaterial.platformMerchantIdentifier, identityCertificate: "platform.pem",
            identityKey: "platform.key", domainAssociationFile: "platform-association", processingKeys: [key])
    }

    public static func addAdmin(_ file: inout ConfigurationFile) {
        file.admin = .init(token: "env:ORCHARD_ADMIN_TOKEN")
    }

    /// Second merchant, platform and admin API, all on.
    public static func all(_ file: inout ConfigurationFile, _ directory: TemporaryDirectory) throws {
        try addSecondMerchant(&file, directory)
        try addPlatform(&file, directory)
        addAdmin(&file)
    }
}
