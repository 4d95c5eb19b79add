import Foundation
import X509

/// The demo as a payment platform integrator (`orchard-sandbox demo --platform`): a platform
/// identity from the demo's test PKI, which the demo's mock gateway accepts for Apple's Web
/// Merchant Registration API, so `orchard domains register` can be tried on one machine.
extension DemoEnvironment {
    /// The platform's merchant ID, as the tests' gateway fixture names it.
    public static let platformIdentifier = TestMaterial.platformMerchantIdentifier
    /// Its Merchant Identity certificate, issued by the demo's test CA.
    public var platformCertificateFile: String { file("test-platform-identity.pem") }
    public var platformKeyFile: String { file("test-platform-identity.key") }

    /// The platform identity in the state folder, issued on first use (and again when the one there
    /// is near its end or from an earlier test CA).
    @discardableResult
    public func platformIdentity() throws -> TestCertificate {
        if let certificatePEM = try? String(contentsOfFile: platformCertificateFile, encoding: .utf8),
            let keyPEM = try? String(contentsOfFile: platformKeyFile, encoding: .utf8),
            let identity = try? TestCertificate(certificatePEM: certificatePEM, keyPEM: keyPEM),
            identity.certificate.issuer == material.pki.ca.certificate.subject,
            identity.certificate.notValidAfter > Date().addingTimeInterval(86_400)
        {
            return identity
        }
        let identity = try material.pki.issueMerchantIdentity(merchantIdentifier: Self.platformIdentifier)
        try identity.write(certificateTo: platformCertificateFile, keyTo: platformKeyFile)
        return identity
    }

    /// The configuration's `platformIntegrator` section for the platform identity (written first).
    func platformSection() throws -> [String: Any] {
        try platformIdentity()
        return [
            "merchantIdentifier": Self.platformIdentifier,
            "identityCertificate": "test-platform-identity.pem",
            "identityKey": "test-platform-identity.key",
        ]
    }
}
