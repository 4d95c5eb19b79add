import Foundation
import SwiftASN1
@_spi(CMS) import X509

/// An Order Type ID certificate, its key and its intermediate (Apple's WWDR G4), checked: what
/// signs a merchant's order packages and authenticates its pushes to APNs.
///
/// Apple publishes no extension that marks an Order Type ID certificate, so it is known by what
/// it is: its subject's UID is the order type identifier (as a Pass Type ID certificate's is the
/// pass type), it can sign, it is not a merchant identity (no merchant-ID extension) nor a
/// payment processing certificate, and the configured intermediate issued it.
public struct OrderTypeIdentity: Sendable {
    public let orderTypeIdentifier: String
    public let certificate: Certificate
    public let intermediates: [Certificate]
    let privateKey: Certificate.PrivateKey

    static let userIDOID: ASN1ObjectIdentifier = [0, 9, 2342, 19_200_300, 100, 1, 1]
    static let merchantIdentifierOID: ASN1ObjectIdentifier = [1, 2, 840, 113_635, 100, 6, 32]

    /// Checks `certificate` for `orderTypeIdentifier` at `now`; `name` (the file) starts each message.
    public init(
        orderTypeIdentifier: String, certificate: Certificate, privateKey: Certificate.PrivateKey, intermediates: [Certificate],
        name: String, at now: Date
    ) throws(WalletOrderError) {
        try Self.checkUsage(certificate, name: name)
        let uid = Self.userID(of: certificate)
        guard uid == orderTypeIdentifier else {
            let found = uid.map { "its subject's UID is \($0)" } ?? "its subject has no UID"
            throw WalletOrderError(
                .notAnOrderTypeCertificate,
                "\(name): not an Order Type ID certificate for \(orderTypeIdentifier) (\(found)); create one for that Order Type ID under Certificates, Identifiers & Profiles, from a CSR `orchard certs csr --kind order-type` makes"
            )
        }
        guard privateKey.publicKey == certificate.publicKey else {
            throw WalletOrderError(.keyMismatch, "\(name): the private key does not match the Order Type ID certificate")
        }
        guard now >= certificate.notValidBefore else {
            throw WalletOrderError(
                .certificateNotYetValid,
                "\(name): the Order Type ID certificate is not valid before \(certificate.notValidBefore.formatted(.iso8601))")
        }
        guard now <= certificate.notValidAfter else {
            throw WalletOrderError(
                .certificateExpired,
                "\(name): the Order Type ID certificate expired on \(certificate.notValidAfter.formatted(.iso8601)); make a new one from a fresh CSR"
            )
        }
        try Self.checkIssuer(of: certificate, among: intermediates, name: name)
        self.orderTypeIdentifier = orderTypeIdentifier
        self.certificate = certificate
        self.privateKey = privateKey
        self.intermediates = intermediates
    }

    /// A merchant identity or processing certificate in the wrong place is named as what it is.
    static func checkUsage(_ certificate: Certificate, name: String) throws(WalletOrderError) {
        if certificate.extensions[oid: merchantIdentifierOID] != nil {
            throw WalletOrderError(
                .notAnOrderTypeCertificate,
                "\(name): this is an Apple Pay merchant certificate (it carries the merchant-ID extension), not an Order Type ID certificate"
            )
        }
        if let usage = try? certificate.extensions.keyUsage, !usage.digitalSignature {
            throw WalletOrderError(
                .notAnOrderTypeCertificate,
                "\(name): the certificate's key usage does not allow signatures, so it cannot sign order packages")
        }
        if let usage = try? certificate.extensions.extendedKeyUsage, !usage.contains(.clientAuth) {
            throw WalletOrderError(
                .notAnOrderTypeCertificate,
                "\(name): the certificate cannot authenticate a TLS client, as an Order Type ID certificate does to APNs")
        }
    }

    /// One of `intermediates` must be a CA whose key signed `certificate`.
    static func checkIssuer(of certificate: Certificate, among intermediates: [Certificate], name: String) throws(WalletOrderError) {
        guard !intermediates.isEmpty else {
            throw WalletOrderError(
                .intermediate,
                "\(name): no intermediate certificate; add Apple's WWDR G4 certificate (AppleWWDRCAG4.cer, apple.com/certificateauthority) as walletOrders.intermediateCertificate"
            )
        }
        let issuer = intermediates.first { candidate in
            let isCA =
                (try? candidate.extensions.basicConstraints).map { if case .isCertificateAuthority = $0 { true } else { false } } ?? false
            return isCA && candidate.subject == certificate.issuer
                && candidate.publicKey.isValidSignature(certificate.signature, for: certificate)
        }
        guard issuer != nil else {
            throw WalletOrderError(
                .intermediate,
                "\(name): the intermediate did not issue this certificate (its issuer is \(certificate.issuer)); use the WWDR intermediate that did, usually G4"
            )
        }
    }

    /// The UID attribute of a certificate's subject.
    public static func userID(of certificate: Certificate) -> String? {
        for rdn in certificate.subject {
            for attribute in rdn where attribute.type == userIDOID {
                return String(describing: attribute.value)
            }
        }
        return nil
    }

    /// The certificate then its intermediates, PEM: the TLS client chain APNs is shown.
    public var certificateChainPEM: [UInt8] {
        get throws { Array(try ([certificate] + intermediates).map { try $0.serializeAsPEM().pemString + "\n" }.joined().utf8) }
    }

    /// The private key, PEM (PKCS#8), for the TLS client; never logged.
    public var privateKeyPEM: [UInt8] {
        get throws { Array((try privateKey.serializeAsPEM().pemString + "\n").utf8) }
    }

    /// A detached CMS SignedData (DER) over `content`, carrying the certificate, its intermediates
    /// and a signing time, as Wallet requires of an order package's `signature`.
    public func signature(over content: [UInt8], signingTime: Date) throws(WalletOrderError) -> [UInt8] {
        do {
            return try CMS.sign(
                content, additionalIntermediateCertificates: intermediates, certificate: certificate, privateKey: privateKey,
                signingTime: signingTime, detached: true)
        } catch {
            throw WalletOrderError(.signing, "cannot sign the order package (\(error))")
        }
    }
}
