import Crypto
import Foundation
import SwiftASN1
import X509
import _CryptoExtras

/// An Order Type ID identity from the test PKI: the certificate and key, and the intermediate
/// that stands in for Apple's WWDR G4.
public struct TestOrderTypeIdentity: Sendable {
    public let leaf: TestCertificate
    public let intermediate: TestCertificate
}

extension TestPKI {
    /// An Order Type ID certificate shaped as Apple's are known to be: RSA-2048, the order type
    /// identifier as the subject's UID and in `CN=Order Type ID: …`, a team as the OU, client
    /// authentication (APNs) and signatures (and, for openssl's default checks, e-mail protection); issued by a WWDR-like intermediate under this CA.
    public func issueOrderTypeIdentity(
        orderTypeIdentifier: String, notValidBefore: Date = Date().addingTimeInterval(-3600),
        notValidAfter: Date = Date().addingTimeInterval(365 * 86_400)
    ) throws -> TestOrderTypeIdentity {
        let intermediate = try issueWWDRIntermediate()
        let key = Certificate.PrivateKey(try _RSA.Signing.PrivateKey(keySize: .bits2048))
        let subject = try DistinguishedName {
            UserID(orderTypeIdentifier)
            CommonName("Order Type ID: \(orderTypeIdentifier)")
            OrganizationalUnitName("ORCHARDT1")
            OrganizationName("Orchard test PKI")
            CountryName("US")
        }
        let certificate = try Certificate(
            version: .v3, serialNumber: Certificate.SerialNumber(), publicKey: key.publicKey, notValidBefore: notValidBefore,
            notValidAfter: notValidAfter, issuer: intermediate.certificate.subject, subject: subject, signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.notCertificateAuthority)
                Critical(KeyUsage(digitalSignature: true))
                // Client authentication (APNs) and e-mail protection: the latter only so that a plain
                // `openssl cms -verify`, which checks S/MIME purposes, accepts the test packages.
                try ExtendedKeyUsage([.clientAuth, .emailProtection])
                AuthorityKeyIdentifier(keyIdentifier: try intermediate.certificate.extensions.subjectKeyIdentifier?.keyIdentifier)
            },
            issuerPrivateKey: intermediate.privateKey)
        return TestOrderTypeIdentity(leaf: TestCertificate(certificate: certificate, privateKey: key), intermediate: intermediate)
    }

    /// A CA under this one that may issue end certificates only, as WWDR G4 is under Apple's root.
    public func issueWWDRIntermediate() throws -> TestCertificate {
        let key = Certificate.PrivateKey(P256.Signing.PrivateKey())
        let subject = try DistinguishedName {
            CountryName("US")
            OrganizationName("Orchard test PKI")
            OrganizationalUnitName("G4")
            CommonName("Orchard Test WWDR Intermediate (not for production)")
        }
        let certificate = try Certificate(
            version: .v3, serialNumber: Certificate.SerialNumber(), publicKey: key.publicKey,
            notValidBefore: ca.certificate.notValidBefore, notValidAfter: ca.certificate.notValidAfter, issuer: ca.certificate.subject,
            subject: subject, signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.isCertificateAuthority(maxPathLength: 0))
                Critical(KeyUsage(keyCertSign: true, cRLSign: true))
                SubjectKeyIdentifier(hash: key.publicKey)
                AuthorityKeyIdentifier(keyIdentifier: try ca.certificate.extensions.subjectKeyIdentifier?.keyIdentifier)
            },
            issuerPrivateKey: ca.privateKey)
        return TestCertificate(certificate: certificate, privateKey: key)
    }
}
