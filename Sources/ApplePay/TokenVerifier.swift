import Crypto
import Foundation
import SwiftASN1
import Synchronization
import X509

/// Verifies a payment token's CMS signature: Apple's chain, the signer, the digest over the
/// token's fields, the signature and the signing time, all against an injected time.
///
/// The chain's signature checks (one costs ~0.7 ms for the P-384 root) are cached by the
/// certificates' bytes, so a token usually costs one ECDSA or RSA verify.
public struct TokenVerifier: Sendable {
    /// How far the signing time may be from "now".
    public struct Policy: Sendable, Equatable {
        /// Reject tokens signed longer ago than this.
        public var maximumAge: TimeInterval
        /// Reject tokens signed further in the future than this (clock skew).
        public var maximumFutureSkew: TimeInterval

        public init(maximumAge: TimeInterval = 300, maximumFutureSkew: TimeInterval = 60) {
            self.maximumAge = maximumAge
            self.maximumFutureSkew = maximumFutureSkew
        }
    }

    /// What a successful verification established.
    public struct Verified: Sendable {
        public var decoded: PaymentData.Decoded
        public var signingTime: Date
        public var leaf: Certificate
    }

    public static let leafOID: ASN1ObjectIdentifier = [1, 2, 840, 113_635, 100, 6, 29]
    public static let intermediateOID: ASN1ObjectIdentifier = [1, 2, 840, 113_635, 100, 6, 2, 14]

    public let root: Certificate
    public let policy: Policy
    private let verifiedChains = ChainCache()

    /// - Parameter root: the trust anchor; Apple Root CA - G3 unless a test configures its own.
    public init(root: Certificate = AppleRootCA.g3, policy: Policy = Policy()) {
        self.root = root
        self.policy = policy
    }

    public func verify(_ paymentData: PaymentData, at now: Date) throws(ApplePayError) -> Verified {
        let decoded = try paymentData.decoded()
        let cms = try CMSSignedData(ber: decoded.signature)
        let leaf = try signingCertificate(cms, at: now)
        let signingTime = try checkSigner(cms, leaf: leaf, signedContent: decoded.signedContent)
        try checkAge(signingTime, at: now)
        return Verified(decoded: decoded, signingTime: signingTime, leaf: leaf)
    }

    /// Apple's leaf from the signature, chained to the root and valid at `now`.
    private func signingCertificate(_ cms: CMSSignedData, at now: Date) throws(ApplePayError) -> Certificate {
        var certificates: [(certificate: Certificate, der: ArraySlice<UInt8>)] = []
        for der in cms.certificates {
            guard let certificate = verifiedChains.certificate(der) else {
                throw ApplePayError(.malformedSignature, "a certificate in the token signature does not parse")
            }
            certificates.append((certificate, der))
        }
        guard let leaf = certificates.first(where: { $0.certificate.extensions[oid: Self.leafOID] != nil }),
            let intermediate = certificates.first(where: { $0.certificate.extensions[oid: Self.intermediateOID] != nil })
        else {
            throw ApplePayError(
                .missingSigningCertificate,
                "the signature must carry Apple's leaf (OID 1.2.840.113635.100.6.29) and intermediate (1.2.840.113635.100.6.2.14) certificates"
            )
        }
        try checkChain(leaf: leaf, intermediate: intermediate)
        for certificate in [intermediate.certificate, leaf.certificate]
        where now < certificate.notValidBefore || now > certificate.notValidAfter {
            throw ApplePayError(
                .signingCertificateExpired,
                "the signing certificate \(certificate.subject) is valid only from \(certificate.notValidBefore.formatted(.iso8601)) to \(certificate.notValidAfter.formatted(.iso8601))"
            )
        }
        return leaf.certificate
    }

    /// The one signer is the leaf, its signed digest covers the token, and its signature verifies;
    /// returns the signing time it signed.
    private func checkSigner(_ cms: CMSSignedData, leaf: Certificate, signedContent: [UInt8]) throws(ApplePayError) -> Date {
        guard cms.signers.count == 1, let signer = cms.signers.first else {
            throw ApplePayError(.signerMismatch, "the signature must have exactly one signer, has \(cms.signers.count)")
        }
        guard signer.issuer == leaf.issuer, signer.serialNumber == leaf.serialNumber.bytes else {
            throw ApplePayError(.signerMismatch, "the CMS signer is not Apple's leaf certificate")
        }
        guard signer.digestAlgorithm == CMSObjectIdentifiers.sha256 else {
            throw ApplePayError(.malformedSignature, "the digest algorithm must be SHA-256")
        }
        guard let digestNode = signer.attributes[CMSObjectIdentifiers.messageDigest],
            let timeNode = signer.attributes[CMSObjectIdentifiers.signingTime],
            signer.attributes[CMSObjectIdentifiers.contentType] != nil
        else {
            throw ApplePayError(.malformedSignature, "signed attributes must include contentType, signingTime and messageDigest")
        }
        let digest: [UInt8]
        let signingTime: Date
        do {
            digest = try CMSSignedData.octets(digestNode)
            signingTime = try CMSSignedData.time(timeNode)
        } catch {
            throw ApplePayError(.malformedSignature, "unreadable messageDigest or signingTime attribute")
        }
        guard digest == Array(SHA256.hash(data: signedContent)) else {
            throw ApplePayError(
                .messageDigestMismatch, "the signed digest does not match the token's key, data, transactionId and applicationData")
        }

        let algorithm: Certificate.SignatureAlgorithm
        switch signer.signatureAlgorithm {
        case CMSObjectIdentifiers.ecdsaWithSHA256: algorithm = .ecdsaWithSHA256
        case CMSObjectIdentifiers.rsaEncryption, CMSObjectIdentifiers.sha256WithRSAEncryption: algorithm = .sha256WithRSAEncryption
        default: throw ApplePayError(.malformedSignature, "unsupported signature algorithm \(signer.signatureAlgorithm)")
        }
        guard leaf.publicKey.isValidSignature(signer.signature, for: signer.signedAttributesDER, signatureAlgorithm: algorithm) else {
            throw ApplePayError(.invalidSignature, "Apple's signature over the token does not verify")
        }
        return signingTime
    }

    /// The signing time is within the policy's age and future skew of `now`.
    private func checkAge(_ signingTime: Date, at now: Date) throws(ApplePayError) {
        let age = now.timeIntervalSince(signingTime)
        guard age <= policy.maximumAge else {
            throw ApplePayError(
                .signingTimeTooOld,
                "the token was signed at \(signingTime.formatted(.iso8601)), more than \(Int(policy.maximumAge)) s before \(now.formatted(.iso8601))"
            )
        }
        guard -age <= policy.maximumFutureSkew else {
            throw ApplePayError(
                .signingTimeInFuture,
                "the token's signing time \(signingTime.formatted(.iso8601)) is more than \(Int(policy.maximumFutureSkew)) s after \(now.formatted(.iso8601))"
            )
        }
    }

    /// Leaf ← intermediate ← root, by names and signatures; validity dates are checked by the caller.
    private func checkChain(
        leaf: (certificate: Certificate, der: ArraySlice<UInt8>), intermediate: (certificate: Certificate, der: ArraySlice<UInt8>)
    ) throws(ApplePayError) {
        let key = Array(SHA256.hash(data: Array(leaf.der) + Array(intermediate.der)))
        if verifiedChains.contains(key) { return }
        let rootKey = root.publicKey
        guard intermediate.certificate.issuer == root.subject,
            rootKey.isValidSignature(intermediate.certificate.signature, for: intermediate.certificate),
            let constraints = try? intermediate.certificate.extensions.basicConstraints,
            case .isCertificateAuthority = constraints,
            leaf.certificate.issuer == intermediate.certificate.subject,
            intermediate.certificate.publicKey.isValidSignature(leaf.certificate.signature, for: leaf.certificate)
        else {
            throw ApplePayError(.untrustedCertificateChain, "the token's certificates do not chain to the trusted root (\(root.subject))")
        }
        verifiedChains.insert(key)
    }
}

/// Chains whose signatures verified, by the SHA-256 of their certificates' bytes, and
/// parsed certificates by their bytes: Apple signs with a handful of certificates, so each
/// token would otherwise re-parse the same two.
final class ChainCache: Sendable {
    private let chains = Mutex<Set<[UInt8]>>([])
    private let parsed = Mutex<[DERKey: Certificate]>([:])
    private static let limit = 64

    func certificate(_ slice: ArraySlice<UInt8>) -> Certificate? {
        let der = DERKey(bytes: Array(slice))
        if let hit = parsed.withLock({ $0[der] }) { return hit }
        guard let certificate = try? Certificate(derEncoded: der.bytes) else { return nil }
        parsed.withLock { parsed in
            if parsed.count >= Self.limit { parsed.removeAll() }
            parsed[der] = certificate
        }
        return certificate
    }

    func contains(_ key: [UInt8]) -> Bool { chains.withLock { $0.contains(key) } }

    /// A certificate's bytes as a key, hashed as one buffer: `[UInt8]` itself hashes byte by
    /// byte, which cost more than the lookup saved on every token.
    struct DERKey: Hashable {
        let bytes: [UInt8]

        func hash(into hasher: inout Hasher) {
            bytes.withUnsafeBytes { hasher.combine(bytes: $0) }
        }
    }

    func insert(_ key: [UInt8]) {
        chains.withLock { chains in
            if chains.count >= Self.limit { chains.removeAll() }  // Apple rotates leaves rarely; a bound keeps it small
            chains.insert(key)
        }
    }
}
