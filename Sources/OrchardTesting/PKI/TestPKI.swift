import ApplePay
import Crypto
import Foundation
import SwiftASN1
import X509
import _CryptoExtras

/// A certificate and its private key, with their PEM forms.
public struct TestCertificate: Sendable {
    public let certificate: Certificate
    public let privateKey: Certificate.PrivateKey

    public init(certificate: Certificate, privateKey: Certificate.PrivateKey) {
        self.certificate = certificate
        self.privateKey = privateKey
    }

    /// Loads a certificate and key written by ``write(certificateTo:keyTo:)``.
    public init(certificatePEM: String, keyPEM: String) throws {
        self.certificate = try Certificate(pemEncoded: certificatePEM)
        self.privateKey = try Certificate.PrivateKey(pemEncoded: keyPEM)
    }

    public var certificatePEM: String {
        get throws { try certificate.serializeAsPEM().pemString + "\n" }
    }

    public var keyPEM: String {
        get throws { try privateKey.serializeAsPEM().pemString + "\n" }
    }

    /// Writes the certificate (0644) and the key (0600).
    public func write(certificateTo certificatePath: String, keyTo keyPath: String) throws {
        try Data(certificatePEM.utf8).write(to: URL(fileURLWithPath: certificatePath))
        try Data(keyPEM.utf8).write(to: URL(fileURLWithPath: keyPath))
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: keyPath)
    }
}

/// A throwaway public-key infrastructure for tests and the demo: a CA, TLS server
/// certificates for loopback, and merchant identity certificates shaped like Apple's.
///
/// Nothing here is trusted by Orchard unless a configuration names its CA explicitly.
public struct TestPKI: Sendable {
    public let ca: TestCertificate

    public init(ca: TestCertificate) {
        self.ca = ca
    }

    /// A new CA (EC P-256) valid from a day before `now` for two years.
    public static func make(commonName: String = "Orchard Test CA (not for production)", now: Date = Date()) throws -> TestPKI {
        let key = Certificate.PrivateKey(P256.Signing.PrivateKey())
        let name = try DistinguishedName {
            OrganizationName("Orchard test PKI")
            CommonName(commonName)
        }
        let certificate = try Certificate(
            version: .v3,
            serialNumber: Certificate.SerialNumber(),
            publicKey: key.publicKey,
            notValidBefore: now.addingTimeInterval(-86_400),
            notValidAfter: now.addingTimeInterval(2 * 365 * 86_400),
            issuer: name,
            subject: name,
            signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.isCertificateAuthority(maxPathLength: 1))
                Critical(KeyUsage(keyCertSign: true, cRLSign: true))
                SubjectKeyIdentifier(hash: key.publicKey)
            },
            issuerPrivateKey: key
        )
        return TestPKI(ca: TestCertificate(certificate: certificate, privateKey: key))
    }

    /// A TLS server certificate (EC P-256) for the given DNS names and IP addresses, valid from an
    /// hour before `now` until `notValidAfter` (a year after `now` unless given: a past date makes an
    /// expired one).
    public func issueServerCertificate(
        hosts: [String] = ["localhost", "127.0.0.1", "::1"], now: Date = Date(), notValidAfter: Date? = nil
    ) throws -> TestCertificate {
        let key = Certificate.PrivateKey(P256.Signing.PrivateKey())
        let names: [GeneralName] = hosts.map { host in
            if let bytes = Self.ipAddressBytes(host) {
                return .ipAddress(ASN1OctetString(contentBytes: bytes[...]))
            }
            return .dnsName(host)
        }
        return try issue(
            commonName: hosts.first ?? "localhost",
            key: key,
            notValidBefore: min(now.addingTimeInterval(-3600), (notValidAfter ?? now).addingTimeInterval(-86_400)),
            notValidAfter: notValidAfter ?? now.addingTimeInterval(365 * 86_400),
            extraExtensions: [
                try Certificate.Extension(SubjectAlternativeNames(names), critical: false),
                try Certificate.Extension(ExtendedKeyUsage([.serverAuth]), critical: false),
                try Certificate.Extension(KeyUsage(digitalSignature: true), critical: true),
            ]
        )
    }

    /// A merchant identity certificate like Apple's: RSA-2048, client-auth, with the
    /// merchant-ID extension (1.2.840.113635.100.6.32).
    public func issueMerchantIdentity(
        merchantIdentifier: String,
        notValidBefore: Date = Date().addingTimeInterval(-3600),
        notValidAfter: Date = Date().addingTimeInterval(365 * 86_400)
    ) throws -> TestCertificate {
        let key = Certificate.PrivateKey(try _RSA.Signing.PrivateKey(keySize: .bits2048))
        let certificate = try issueMerchantIdentity(
            merchantIdentifier: merchantIdentifier, publicKey: key.publicKey, notValidBefore: notValidBefore, notValidAfter: notValidAfter)
        return TestCertificate(certificate: certificate, privateKey: key)
    }

    /// A merchant identity certificate for a key made elsewhere (a CSR's), as Apple's CA signs one.
    public func issueMerchantIdentity(
        merchantIdentifier: String, publicKey: Certificate.PublicKey, notValidBefore: Date = Date().addingTimeInterval(-3600),
        notValidAfter: Date = Date().addingTimeInterval(365 * 86_400)
    ) throws -> Certificate {
        try issue(
            commonName: "Merchant ID: \(merchantIdentifier)",
            key: publicKey,
            notValidBefore: notValidBefore,
            notValidAfter: notValidAfter,
            extraExtensions: [
                try Certificate.Extension(ExtendedKeyUsage([.clientAuth]), critical: false),
                try Certificate.Extension(KeyUsage(digitalSignature: true, keyEncipherment: true), critical: true),
                try MerchantIdentifierExtension.make(merchantIdentifier: merchantIdentifier),
            ]
        )
    }

    /// How Apple has named a Payment Processing certificate's subject.
    public enum ProcessingSubject: Sendable, CaseIterable {
        /// `CN=Apple Pay Payment Processing:<merchant ID>`, as today's certificates are named.
        case paymentProcessing
        /// `CN=Merchant ID: <merchant ID>`, as older ones are: the same name an identity certificate has.
        case merchantID
    }

    /// A payment processing certificate like Apple's for `publicKey`: key agreement and key
    /// encipherment, no extended key usage, the merchant ID as the subject's UID and in its extension.
    public func issueProcessingCertificate(
        merchantIdentifier: String,
        publicKey: Certificate.PublicKey,
        subject format: ProcessingSubject = .paymentProcessing,
        notValidBefore: Date = Date().addingTimeInterval(-3600),
        notValidAfter: Date = Date().addingTimeInterval(365 * 86_400)
    ) throws -> Certificate {
        let commonName =
            switch format {
            case .paymentProcessing: "Apple Pay Payment Processing:\(merchantIdentifier)"
            case .merchantID: "Merchant ID: \(merchantIdentifier)"
            }
        let subject = try DistinguishedName {
            UserID(merchantIdentifier)
            CommonName(commonName)
            OrganizationName("Orchard test PKI")
        }
        return try Certificate(
            version: .v3, serialNumber: Certificate.SerialNumber(), publicKey: publicKey, notValidBefore: notValidBefore,
            notValidAfter: notValidAfter, issuer: ca.certificate.subject, subject: subject, signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.notCertificateAuthority)
                Critical(KeyUsage(keyEncipherment: true, keyAgreement: true))
                try MerchantIdentifierExtension.make(merchantIdentifier: merchantIdentifier)
            },
            issuerPrivateKey: ca.privateKey)
    }

    /// ``issueProcessingCertificate(merchantIdentifier:publicKey:subject:notValidBefore:notValidAfter:)``
    /// as PEM, for an EC key as tokens are encrypted to it (a processor's CSR carries one).
    public func processingCertificatePEM(merchantIdentifier: String, for key: P256.KeyAgreement.PublicKey) throws -> String {
        let publicKey = Certificate.PublicKey(try P256.Signing.PublicKey(rawRepresentation: key.rawRepresentation))
        return try issueProcessingCertificate(merchantIdentifier: merchantIdentifier, publicKey: publicKey).serializeAsPEM().pemString
    }

    private func issue(
        commonName: String,
        key: Certificate.PrivateKey,
        notValidBefore: Date,
        notValidAfter: Date,
        extraExtensions: [Certificate.Extension]
    ) throws -> TestCertificate {
        let certificate = try issue(
            commonName: commonName, key: key.publicKey, notValidBefore: notValidBefore, notValidAfter: notValidAfter,
            extraExtensions: extraExtensions)
        return TestCertificate(certificate: certificate, privateKey: key)
    }

    private func issue(
        commonName: String,
        key: Certificate.PublicKey,
        notValidBefore: Date,
        notValidAfter: Date,
        extraExtensions: [Certificate.Extension]
    ) throws -> Certificate {
        let subject = try DistinguishedName {
            OrganizationName("Orchard test PKI")
            CommonName(commonName)
        }
        var extensions = try Certificate.Extensions {
            Critical(BasicConstraints.notCertificateAuthority)
            AuthorityKeyIdentifier(keyIdentifier: try ca.certificate.extensions.subjectKeyIdentifier?.keyIdentifier)
        }
        for ext in extraExtensions { try extensions.append(ext) }
        return try Certificate(
            version: .v3,
            serialNumber: Certificate.SerialNumber(),
            publicKey: key,
            notValidBefore: notValidBefore,
            notValidAfter: notValidAfter,
            issuer: ca.certificate.subject,
            subject: subject,
            signatureAlgorithm: .ecdsaWithSHA256,
            extensions: extensions,
            issuerPrivateKey: ca.privateKey
        )
    }

    static func ipAddressBytes(_ host: String) -> [UInt8]? {
        var v4 = in_addr()
        if inet_pton(AF_INET, host, &v4) == 1 {
            return withUnsafeBytes(of: &v4) { Array($0) }
        }
        var v6 = in6_addr()
        if inet_pton(AF_INET6, host, &v6) == 1 {
            return withUnsafeBytes(of: &v6) { Array($0) }
        }
        return nil
    }
}

/// The subject's `UID` (0.9.2342.19200300.100.1.1), where Apple writes the merchant ID.
struct UserID: RelativeDistinguishedNameConvertible {
    var value: String
    init(_ value: String) { self.value = value }
    func makeRDN() throws -> RelativeDistinguishedName {
        RelativeDistinguishedName(.init(type: [0, 9, 2342, 19_200_300, 100, 1, 1], utf8String: value))
    }
}
