import Crypto
import Foundation
import SwiftASN1
import Synchronization
import X509

/// Verifies a payment token's CMS signature: Apple's chain, the signer, the digest over the
/// token's fields, the signature and the signing time, all against an injected time.
///
/// The chain's parse and signature checks (one costs ~0.7 ms for the P-384 root) are cached by
/// the certificates' exact bytes, so a token usually costs one ECDSA or RSA verify.
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
    let verifiedChains: ChainCache

    /// - Parameter root: the trust anchor; Apple Root CA - G3 unless a test configures its own.
    public init(root: Certificate = AppleRootCA.g3, policy: Policy = Policy()) {
        self.root = root
        self.policy = policy
        verifiedChains = ChainCache()
    }

    /// The same root and chain cache under another age policy: token events' metadata is checked
    /// against the chains payments already verified, but may be older than a payment token.
    public func withPolicy(_ policy: Policy) -> TokenVerifier {
        TokenVerifier(root: root, policy: policy, verifiedChains: verifiedChains)
    }

    private init(root: Certificate, policy: Policy, verifiedChains: ChainCache) {
        self.root = root
        self.policy = policy
        self.verifiedChains = verifiedChains
    }

    public func verify(_ paymentData: PaymentData, at now: Date) throws(ApplePayError) -> Verified {
        try verify(try paymentData.decoded(), at: now)
    }

    /// Verifies decoded fields: a payment token's, or a token event's encrypted metadata (whose
    /// signed content is its key material and data alone, with no transaction ID).
    public func verify(_ decoded: PaymentData.Decoded, at now: Date) throws(ApplePayError) -> Verified {
        let cms = try CMSSignedData(ber: decoded.signature)
        let chain = try signingChain(cms)
        for (certificate, validity) in [(chain.intermediate, chain.intermediateValidity), (chain.leaf, chain.leafValidity)]
        where now < validity.notBefore || now > validity.notAfter {
            throw ApplePayError(
                .signingCertificateExpired,
                "the signing certificate \(certificate.subject) is valid only from \(validity.notBefore.formatted(.iso8601)) to \(validity.notAfter.formatted(.iso8601))"
            )
        }
        let signingTime = try checkSigner(cms, chain: chain, decoded: decoded)
        try checkAge(signingTime, at: now)
        return Verified(decoded: decoded, signingTime: signingTime, leaf: chain.leaf)
    }

    /// Apple's leaf and intermediate from the signature, chained to the root (dates are checked by the
    /// caller, against its time). Known chains come from the cache, by their certificates' exact bytes.
    private func signingChain(_ cms: CMSSignedData) throws(ApplePayError) -> VerifiedChain {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(cms.certificates.reduce(0) { $0 + $1.count })
        for certificate in cms.certificates { bytes.append(contentsOf: certificate) }
        let key = ChainCache.Key(bytes: bytes)
        if let chain = verifiedChains[key] { return chain }
        var certificates: [(certificate: Certificate, der: ArraySlice<UInt8>)] = []
        for der in cms.certificates {
            guard let certificate = try? Certificate(derEncoded: der) else {
                throw ApplePayError(.malformedSignature, "a certificate in the token signature does not parse")
            }
            certificates.append((certificate, der))
        }
        guard let leaf = certificates.first(where: { $0.certificate.extensions[oid: Self.leafOID] != nil }),
            let intermediate = certificates.first(where: { $0.certificate.extensions[oid: Self.intermediateOID] != nil })?.certificate
        else {
            throw ApplePayError(
                .missingSigningCertificate,
                "the signature must carry Apple's leaf (OID 1.2.840.113635.100.6.29) and intermediate (1.2.840.113635.100.6.2.14) certificates"
            )
        }
        try checkChain(leaf: leaf.certificate, intermediate: intermediate)
        let chain = VerifiedChain(leaf: leaf.certificate, leafDER: leaf.der, intermediate: intermediate)
        verifiedChains[key] = chain
        return chain
    }

    /// The one signer is the leaf, its signed digest covers the token, and its signature verifies;
    /// returns the signing time it signed.
    private func checkSigner(_ cms: CMSSignedData, chain: VerifiedChain, decoded: PaymentData.Decoded) throws(ApplePayError) -> Date {
        guard cms.signers.count == 1, let signer = cms.signers.first else {
            throw ApplePayError(.signerMismatch, "the signature must have exactly one signer, has \(cms.signers.count)")
        }
        guard try chain.isLeafIssuer(signer.issuer), chain.isLeafSerial(signer.serialNumber) else {
            throw ApplePayError(.signerMismatch, "the CMS signer is not Apple's leaf certificate")
        }
        guard signer.digestAlgorithm.elementsEqual(CMSSignedData.OID.sha256) else {
            throw ApplePayError(.malformedSignature, "the digest algorithm must be SHA-256")
        }
        guard let digestNode = signer.attribute(CMSSignedData.OID.messageDigest),
            let timeNode = signer.attribute(CMSSignedData.OID.signingTime),
            signer.attribute(CMSSignedData.OID.contentType) != nil
        else {
            throw ApplePayError(.malformedSignature, "signed attributes must include contentType, signingTime and messageDigest")
        }
        let digest: [UInt8]
        let signingTime: Date
        do {
            digest = try cms.reader.octets(digestNode)
            signingTime = try cms.time(timeNode)
        } catch {
            throw ApplePayError(.malformedSignature, "unreadable messageDigest or signingTime attribute")
        }
        guard digest.elementsEqual(decoded.signedContentDigest()) else {
            throw ApplePayError(.messageDigestMismatch, "the signed digest does not match the token's key, data and header fields")
        }

        let algorithm: Certificate.SignatureAlgorithm
        switch signer.signatureAlgorithm {
        case let oid where oid.elementsEqual(CMSSignedData.OID.ecdsaWithSHA256): algorithm = .ecdsaWithSHA256
        case let oid
        where oid.elementsEqual(CMSSignedData.OID.rsaEncryption) || oid.elementsEqual(CMSSignedData.OID.sha256WithRSAEncryption):
            algorithm = .sha256WithRSAEncryption
        default:
            throw ApplePayError(
                .malformedSignature, "unsupported signature algorithm \(CMSSignedData.describe(signer.signatureAlgorithm))")
        }
        guard chain.leaf.publicKey.isValidSignature(signer.signature, for: signer.signedAttributesDER, signatureAlgorithm: algorithm)
        else {
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
    private func checkChain(leaf: Certificate, intermediate: Certificate) throws(ApplePayError) {
        let rootKey = root.publicKey
        guard intermediate.issuer == root.subject,
            rootKey.isValidSignature(intermediate.signature, for: intermediate),
            let constraints = try? intermediate.extensions.basicConstraints,
            case .isCertificateAuthority = constraints,
            leaf.issuer == intermediate.subject,
            intermediate.publicKey.isValidSignature(leaf.signature, for: leaf)
        else {
            throw ApplePayError(.untrustedCertificateChain, "the token's certificates do not chain to the trusted root (\(root.subject))")
        }
    }
}

/// A leaf and intermediate whose chain to the root verified, with what each token checks of them.
struct VerifiedChain: Sendable {
    let leaf: Certificate
    let intermediate: Certificate
    let leafValidity: (notBefore: Date, notAfter: Date)
    let intermediateValidity: (notBefore: Date, notAfter: Date)
    /// The leaf's issuer as DER, to compare with the signer's by bytes.
    let leafIssuerDER: [UInt8]
    /// The leaf's serial number as an INTEGER's value (``ASN1IntegerValue``), read from the
    /// certificate's own DER: swift-certificates strips every leading zero byte, which drops the
    /// sign octet that a serial with its top bit set carries in the signer's identifier.
    let leafSerial: ASN1IntegerValue?

    init(leaf: Certificate, leafDER: ArraySlice<UInt8>, intermediate: Certificate) {
        self.leaf = leaf
        self.intermediate = intermediate
        // Converted once: a certificate computes these Dates from its ASN.1 times on every access.
        leafValidity = (leaf.notValidBefore, leaf.notValidAfter)
        intermediateValidity = (intermediate.notValidBefore, intermediate.notValidAfter)
        let fields = Self.identity(ofCertificate: leafDER)
        leafIssuerDER = fields.issuer
        leafSerial = fields.serial
    }

    /// The issuer Name's encoding and the serial number's value in a certificate (TBSCertificate:
    /// [0] version, serial, signature algorithm, issuer); empty and nil if they cannot be found.
    static func identity(ofCertificate der: ArraySlice<UInt8>) -> (issuer: [UInt8], serial: ASN1IntegerValue?) {
        let reader = BERReader(bytes: Array(der))
        guard let certificate = try? reader.children(of: try reader.root(), tag: 0x30), let tbs = certificate.first,
            var fields = try? reader.children(of: tbs, tag: 0x30)
        else { return ([], nil) }
        if fields.first?.tag == 0xA0 { fields.removeFirst() }
        guard fields.count > 2, fields[2].tag == 0x30, fields[0].tag == 0x02, !fields[0].constructed else { return ([], nil) }
        return (Array(reader.bytes[fields[2].encoding]), ASN1IntegerValue(content: reader.bytes[fields[0].content]))
    }

    /// Whether a signer's serial number (an INTEGER's content octets) is the leaf's: equal as
    /// numbers, whatever sign or padding octets either encoding carries.
    func isLeafSerial(_ serial: ArraySlice<UInt8>) -> Bool {
        guard let leafSerial, let value = ASN1IntegerValue(content: serial) else { return false }
        return value == leafSerial
    }

    /// Whether a signer's issuer Name is the leaf's issuer: equal DER bytes, or (another encoding
    /// of a Name) equal once parsed, as the names' own comparison decides.
    func isLeafIssuer(_ issuer: ArraySlice<UInt8>) throws(ApplePayError) -> Bool {
        if !leafIssuerDER.isEmpty, issuer.elementsEqual(leafIssuerDER) { return true }
        guard let name = try? DistinguishedName(derEncoded: try DER.parse(issuer)) else {
            throw CMSSignedData.malformed("the signer's issuer is not a readable name")
        }
        return name == leaf.issuer
    }
}

/// Chains whose signatures verified, by their certificates' exact bytes: Apple signs with a
/// handful of certificates, so each token would otherwise re-parse the same two and re-verify
/// the P-384 root's signature (~0.7 ms). Only a byte-for-byte identical certificate list hits;
/// the size is bounded (Apple rotates leaves rarely; a flood of other chains only empties it).
final class ChainCache: Sendable {
    private let chains = Mutex<[Key: VerifiedChain]>([:])
    static let limit = 64

    subscript(key: Key) -> VerifiedChain? {
        get { chains.withLock { $0[key] } }
        set {
            chains.withLock { chains in
                if chains.count >= Self.limit { chains.removeAll() }
                chains[key] = newValue
            }
        }
    }

    var count: Int { chains.withLock { $0.count } }

    /// Certificates' bytes as a key, hashed as one buffer: `[UInt8]` itself hashes byte by byte,
    /// which cost more than the lookup saved on every token.
    struct Key: Hashable {
        let bytes: [UInt8]

        func hash(into hasher: inout Hasher) {
            bytes.withUnsafeBytes { hasher.combine(bytes: $0) }
        }
    }
}
