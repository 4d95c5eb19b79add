import Foundation
import SwiftASN1
import X509

/// The object identifiers of CMS (RFC 5652) and its algorithms that payment tokens use.
public enum CMSObjectIdentifiers {
    public static let data: ASN1ObjectIdentifier = [1, 2, 840, 113_549, 1, 7, 1]
    public static let signedData: ASN1ObjectIdentifier = [1, 2, 840, 113_549, 1, 7, 2]
    public static let contentType: ASN1ObjectIdentifier = [1, 2, 840, 113_549, 1, 9, 3]
    public static let messageDigest: ASN1ObjectIdentifier = [1, 2, 840, 113_549, 1, 9, 4]
    public static let signingTime: ASN1ObjectIdentifier = [1, 2, 840, 113_549, 1, 9, 5]
    public static let sha256: ASN1ObjectIdentifier = [2, 16, 840, 1, 101, 3, 4, 2, 1]
    public static let ecdsaWithSHA256: ASN1ObjectIdentifier = [1, 2, 840, 10_045, 4, 3, 2]
    public static let rsaEncryption: ASN1ObjectIdentifier = [1, 2, 840, 113_549, 1, 1, 1]
    public static let sha256WithRSAEncryption: ASN1ObjectIdentifier = [1, 2, 840, 113_549, 1, 1, 11]
}

/// The parts of a detached CMS SignedData (RFC 5652) that a payment token signature uses.
///
/// Parsed from BER: Apple's signatures use indefinite lengths, which a DER-only parser
/// rejects. Signed attributes must be DER (RFC 5652 §5.3), and are kept as encoded.
struct CMSSignedData {
    struct SignerInfo {
        var issuer: DistinguishedName
        var serialNumber: ArraySlice<UInt8>
        var digestAlgorithm: ASN1ObjectIdentifier
        /// The signed attributes re-tagged as a SET: the bytes the signature covers.
        var signedAttributesDER: [UInt8]
        var attributes: [ASN1ObjectIdentifier: ASN1Node]
        var signatureAlgorithm: ASN1ObjectIdentifier
        var signature: [UInt8]
    }

    /// Each certificate's DER bytes, unparsed (the verifier parses through a cache).
    var certificates: [ArraySlice<UInt8>]
    var signers: [SignerInfo]

    init(ber bytes: [UInt8]) throws(ApplePayError) {
        do {
            try self.init(parsing: try BER.parse(bytes))
        } catch let error as ApplePayError {
            throw error
        } catch {
            throw Self.malformed("not valid BER (\(error))")
        }
    }

    static func malformed(_ why: String) -> ApplePayError {
        ApplePayError(.malformedSignature, "the token signature is not a readable CMS SignedData: \(why)")
    }

    private init(parsing root: ASN1Node) throws {
        // ContentInfo ::= SEQUENCE { contentType, [0] EXPLICIT content }
        let contentInfo = try Self.children(of: root, tag: .sequence)
        guard contentInfo.count == 2, try ASN1ObjectIdentifier(derEncoded: contentInfo[0]) == CMSObjectIdentifiers.signedData else {
            throw Self.malformed("content type is not signedData")
        }
        let wrapper = try Self.children(of: contentInfo[1], tag: ASN1Identifier(tagWithNumber: 0, tagClass: .contextSpecific))
        guard wrapper.count == 1 else { throw Self.malformed("empty content") }
        // SignedData ::= SEQUENCE { version, digestAlgorithms, encapContentInfo, [0] certificates, [1] crls, signerInfos }
        let fields = try Self.children(of: wrapper[0], tag: .sequence)
        guard fields.count >= 4 else { throw Self.malformed("SignedData has too few fields") }
        var certificates: [ArraySlice<UInt8>] = []
        for field in fields[3..<(fields.count - 1)]
        where field.identifier == ASN1Identifier(tagWithNumber: 0, tagClass: .contextSpecific) {
            for node in try Self.children(of: field, tag: field.identifier) {
                certificates.append(node.encodedBytes)
            }
        }
        self.certificates = certificates
        self.signers = try Self.children(of: fields[fields.count - 1], tag: .set).map(Self.signerInfo)
    }

    private static func signerInfo(_ node: ASN1Node) throws -> SignerInfo {
        // SignerInfo ::= SEQUENCE { version, sid, digestAlgorithm, [0] signedAttrs, signatureAlgorithm, signature, [1] unsignedAttrs }
        let fields = try children(of: node, tag: .sequence)
        guard fields.count >= 6 else { throw malformed("SignerInfo has too few fields") }
        let sid = try children(of: fields[1], tag: .sequence)
        guard sid.count == 2, case .primitive(let serial) = sid[1].content else {
            throw malformed("the signer is not identified by issuer and serial number")
        }
        let signedAttributes = fields[3]
        guard signedAttributes.identifier == ASN1Identifier(tagWithNumber: 0, tagClass: .contextSpecific) else {
            throw malformed("signed attributes are missing")
        }
        var der = Array(signedAttributes.encodedBytes)
        guard der.count > 2, der[1] != 0x80 else { throw malformed("signed attributes are not DER") }
        der[0] = 0x31  // [0] IMPLICIT → SET OF, as RFC 5652 §5.4 requires for the signature input
        var attributes: [ASN1ObjectIdentifier: ASN1Node] = [:]
        for attribute in try children(of: signedAttributes, tag: signedAttributes.identifier) {
            let parts = try children(of: attribute, tag: .sequence)
            guard parts.count == 2 else { throw malformed("an attribute must be a type and a set of values") }
            let values = try children(of: parts[1], tag: .set)
            guard values.count == 1 else { throw malformed("an attribute must have exactly one value") }
            let oid = try ASN1ObjectIdentifier(derEncoded: parts[0])
            guard attributes[oid] == nil else { throw malformed("attribute \(oid) appears twice") }
            attributes[oid] = values[0]
        }
        return SignerInfo(
            issuer: try DistinguishedName(derEncoded: sid[0]),
            serialNumber: serial,
            digestAlgorithm: try algorithm(fields[2]),
            signedAttributesDER: der,
            attributes: attributes,
            signatureAlgorithm: try algorithm(fields[4]),
            signature: try octets(fields[5]))
    }

    /// The OID of an AlgorithmIdentifier (parameters absent or NULL).
    private static func algorithm(_ node: ASN1Node) throws -> ASN1ObjectIdentifier {
        let parts = try children(of: node, tag: .sequence)
        guard let first = parts.first else { throw malformed("empty algorithm identifier") }
        return try ASN1ObjectIdentifier(derEncoded: first)
    }

    /// An OCTET STRING's bytes, primitive or (BER) constructed.
    static func octets(_ node: ASN1Node) throws -> [UInt8] {
        guard node.identifier.tagNumber == ASN1Identifier.octetString.tagNumber, node.identifier.tagClass == .universal else {
            throw malformed("expected an OCTET STRING")
        }
        switch node.content {
        case .primitive(let bytes): return Array(bytes)
        case .constructed(let parts): return try parts.flatMap(octets)
        }
    }

    static func children(of node: ASN1Node, tag: ASN1Identifier) throws -> [ASN1Node] {
        guard node.identifier == tag, case .constructed(let nodes) = node.content else {
            throw malformed("expected \(tag), found \(node.identifier)")
        }
        return Array(nodes)
    }

    /// signingTime as a Date (UTCTime or GeneralizedTime).
    static func time(_ node: ASN1Node) throws -> Date {
        var components = DateComponents()
        components.timeZone = TimeZone(identifier: "UTC")
        if node.identifier == .utcTime {
            let time = try UTCTime(derEncoded: node)
            (components.year, components.month, components.day) = (time.year, time.month, time.day)
            (components.hour, components.minute, components.second) = (time.hours, time.minutes, time.seconds)
        } else {
            let time = try GeneralizedTime(derEncoded: node)
            (components.year, components.month, components.day) = (time.year, time.month, time.day)
            (components.hour, components.minute, components.second) = (time.hours, time.minutes, time.seconds)
        }
        guard let date = Calendar(identifier: .gregorian).date(from: components) else { throw malformed("invalid signingTime") }
        return date
    }
}
