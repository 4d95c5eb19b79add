import Crypto
import Foundation
import SwiftASN1
import X509

/// Apple's merchant-ID certificate extension (OID 1.2.840.113635.100.6.32).
///
/// It holds a UTF8String of 64 hex digits: SHA-256 of the merchant identifier. For
/// processing certificates those 32 bytes are the KDF's `partyV`.
public enum MerchantIdentifierExtension {
    public static let oid: ASN1ObjectIdentifier = [1, 2, 840, 113_635, 100, 6, 32]

    /// Uppercase hex SHA-256 of a merchant identifier, as Apple writes it.
    public static func hash(of merchantIdentifier: String) -> String {
        SHA256.hash(data: Array(merchantIdentifier.utf8)).map { String(format: "%02X", $0) }.joined()
    }

    /// The extension for a merchant identifier.
    public static func make(merchantIdentifier: String) throws -> Certificate.Extension {
        var serializer = DER.Serializer()
        try serializer.serialize(ASN1UTF8String(hash(of: merchantIdentifier)))
        return Certificate.Extension(oid: oid, critical: false, value: serializer.serializedBytes[...])
    }

    /// The extension's hex string, if the certificate carries it.
    public static func value(in certificate: Certificate) -> String? {
        guard let ext = certificate.extensions[oid: oid] else { return nil }
        if let string = try? ASN1UTF8String(derEncoded: ext.value) {
            return String(string)
        }
        return String(decoding: ext.value, as: UTF8.self)  // some certificates carry the bare string
    }
}

/// A merchant identity (TLS client certificate and key), checked before use.
public struct MerchantIdentity: Sendable {
    public let certificate: Certificate
    public let certificatePEM: [UInt8]
    public let keyPEM: [UInt8]

    /// The merchant-ID hash from the certificate's extension, if present.
    public var merchantIdentifierHash: String? { MerchantIdentifierExtension.value(in: certificate) }

    /// Parses and checks a PEM certificate (the first of the file, the leaf) and a PEM key:
    /// both readable, the key matching the certificate, the certificate valid at `now`.
    ///
    /// Messages name `certificateName` or `keyName` (usually the file paths).
    public init(
        certificatePEM: [UInt8], keyPEM: [UInt8],
        certificateName: String, keyName: String,
        at now: Date
    ) throws(ApplePayError) {
        let certificateText = String(decoding: certificatePEM, as: UTF8.self)
        let keyText = String(decoding: keyPEM, as: UTF8.self)
        let leaf: Certificate
        do {
            let documents = try PEMDocument.parseMultiple(pemString: certificateText)
            guard let first = documents.first(where: { $0.discriminator == "CERTIFICATE" }) else {
                throw ApplePayError(.invalidCertificate, "\(certificateName): no PEM CERTIFICATE block found")
            }
            leaf = try Certificate(pemDocument: first)
        } catch let error as ApplePayError {
            throw error
        } catch {
            throw ApplePayError(.invalidCertificate, "\(certificateName): not a readable PEM certificate")
        }
        if keyText.contains("ENCRYPTED PRIVATE KEY") || keyText.contains("Proc-Type: 4,ENCRYPTED") {
            throw ApplePayError(
                .invalidPrivateKey,
                "\(keyName): the private key is encrypted; decrypt it first (Orchard's configuration does, given identityKeyPassword)"
            )
        }
        let key: Certificate.PrivateKey
        do {
            let documents = try PEMDocument.parseMultiple(pemString: keyText)
            guard let document = documents.first(where: { $0.discriminator.hasSuffix("PRIVATE KEY") }) else {
                throw ApplePayError(.invalidPrivateKey, "\(keyName): no PEM PRIVATE KEY block found")
            }
            key = try Certificate.PrivateKey(pemDocument: document)
        } catch let error as ApplePayError {
            throw error
        } catch {
            throw ApplePayError(.invalidPrivateKey, "\(keyName): not a readable PEM private key (RSA or EC)")
        }
        guard key.publicKey == leaf.publicKey else {
            throw ApplePayError(.keyMismatch, "\(keyName): the private key does not match the certificate \(certificateName)")
        }
        guard now >= leaf.notValidBefore else {
            throw ApplePayError(
                .certificateNotYetValid, "\(certificateName): certificate is not valid before \(Self.format(leaf.notValidBefore))")
        }
        guard now <= leaf.notValidAfter else {
            throw ApplePayError(.certificateExpired, "\(certificateName): certificate expired on \(Self.format(leaf.notValidAfter))")
        }
        self.certificate = leaf
        self.certificatePEM = certificatePEM
        self.keyPEM = keyPEM
    }

    /// Whole days until the certificate expires, counted from `now`.
    public func daysLeft(at now: Date) -> Int {
        Int(certificate.notValidAfter.timeIntervalSince(now) / 86_400)
    }

    static func format(_ date: Date) -> String {
        date.formatted(.iso8601)
    }
}
