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
/// Read in place from BER: Apple's signatures use indefinite lengths, which a DER-only parser
/// rejects. Signed attributes must be DER (RFC 5652 §5.3), and are kept as encoded.
/// Identifiers are compared by their content octets (checked minimal, so equal octets are
/// equal identifiers).
struct CMSSignedData {
    struct SignerInfo {
        /// The issuer Name's whole encoding.
        var issuer: ArraySlice<UInt8>
        var serialNumber: ArraySlice<UInt8>
        var digestAlgorithm: ArraySlice<UInt8>
        /// The signed attributes re-tagged as a SET: the bytes the signature covers.
        var signedAttributesDER: [UInt8]
        /// Each attribute's type and its one value.
        var attributes: [(type: ArraySlice<UInt8>, value: BERElement)]
        var signatureAlgorithm: ArraySlice<UInt8>
        var signature: [UInt8]

        func attribute(_ type: [UInt8]) -> BERElement? {
            attributes.first { $0.type.elementsEqual(type) }?.value
        }
    }

    let reader: BERReader
    /// Each certificate's DER bytes, unparsed (the verifier parses through a cache).
    var certificates: [ArraySlice<UInt8>]
    var signers: [SignerInfo]

    init(ber bytes: [UInt8]) throws(ApplePayError) {
        reader = BERReader(bytes: bytes)
        do {
            (certificates, signers) = try Self.parse(reader)
        } catch {
            throw Self.malformed(error.why)
        }
    }

    static func malformed(_ why: String) -> ApplePayError {
        ApplePayError(.malformedSignature, "the token signature is not a readable CMS SignedData: \(why)")
    }

    private static func parse(_ reader: BERReader) throws(BERReader.Failure) -> ([ArraySlice<UInt8>], [SignerInfo]) {
        // ContentInfo ::= SEQUENCE { contentType, [0] EXPLICIT content }
        let contentInfo = try reader.children(of: try reader.root(), tag: 0x30)
        guard contentInfo.count == 2, try reader.objectIdentifier(contentInfo[0]).elementsEqual(OID.signedData) else {
            throw .malformed("content type is not signedData")
        }
        let wrapper = try reader.children(of: contentInfo[1], tag: 0xA0)
        guard wrapper.count == 1 else { throw .malformed("empty content") }
        // SignedData ::= SEQUENCE { version, digestAlgorithms, encapContentInfo, [0] certificates, [1] crls, signerInfos }
        let fields = try reader.children(of: wrapper[0], tag: 0x30)
        guard fields.count >= 4 else { throw .malformed("SignedData has too few fields") }
        // Every element is checked to be well formed BER, as a full parse would, but for the inside
        // of each certificate: that is X509's DER parse's (or, cached, byte-identical to one it passed).
        var certificates: [ArraySlice<UInt8>] = []
        for (index, field) in fields.enumerated() {
            guard (3..<(fields.count - 1)).contains(index), field.tag & 0xDF == 0x80 else {
                try reader.check(field, depth: 4)
                continue
            }
            for node in try reader.children(of: field, tag: 0xA0) {
                certificates.append(reader.bytes[node.encoding])
            }
        }
        let signers = try reader.children(of: fields[fields.count - 1], tag: 0x31).map { (node) throws(BERReader.Failure) in
            try signerInfo(node, reader)
        }
        return (certificates, signers)
    }

    private static func signerInfo(_ node: BERElement, _ reader: BERReader) throws(BERReader.Failure) -> SignerInfo {
        // SignerInfo ::= SEQUENCE { version, sid, digestAlgorithm, [0] signedAttrs, signatureAlgorithm, signature, [1] unsignedAttrs }
        let fields = try reader.children(of: node, tag: 0x30)
        guard fields.count >= 6 else { throw .malformed("SignerInfo has too few fields") }
        let sid = try reader.children(of: fields[1], tag: 0x30)
        guard sid.count == 2, !sid[1].constructed, sid[0].tag == 0x30, !sid[0].indefinite else {
            throw .malformed("the signer is not identified by issuer and serial number")
        }
        let signedAttributes = fields[3]
        guard signedAttributes.tag & 0xDF == 0x80 else { throw .malformed("signed attributes are missing") }
        var der = Array(reader.bytes[signedAttributes.encoding])
        guard der.count > 2, !signedAttributes.indefinite else { throw .malformed("signed attributes are not DER") }
        der[0] = 0x31  // [0] IMPLICIT → SET OF, as RFC 5652 §5.4 requires for the signature input
        var attributes: [(type: ArraySlice<UInt8>, value: BERElement)] = []
        for attribute in try reader.children(of: signedAttributes, tag: 0xA0) {
            let parts = try reader.children(of: attribute, tag: 0x30)
            guard parts.count == 2 else { throw .malformed("an attribute must be a type and a set of values") }
            let values = try reader.children(of: parts[1], tag: 0x31)
            guard values.count == 1 else { throw .malformed("an attribute must have exactly one value") }
            let type = try reader.objectIdentifier(parts[0])
            guard !attributes.contains(where: { $0.type.elementsEqual(type) }) else {
                throw .malformed("attribute \(Self.describe(type)) appears twice")
            }
            attributes.append((type, values[0]))
        }
        return SignerInfo(
            issuer: reader.bytes[sid[0].encoding],
            serialNumber: reader.bytes[sid[1].content],
            digestAlgorithm: try algorithm(fields[2], reader),
            signedAttributesDER: der,
            attributes: attributes,
            signatureAlgorithm: try algorithm(fields[4], reader),
            signature: try reader.octets(fields[5]))
    }

    /// The OID of an AlgorithmIdentifier (parameters absent or NULL).
    private static func algorithm(_ node: BERElement, _ reader: BERReader) throws(BERReader.Failure) -> ArraySlice<UInt8> {
        guard let first = try reader.children(of: node, tag: 0x30).first else { throw .malformed("empty algorithm identifier") }
        return try reader.objectIdentifier(first)
    }

    /// signingTime as a Date: UTCTime (YYMMDDHHMMSSZ, years 1950–2049) or GeneralizedTime
    /// (YYYYMMDDHHMMSS[.fraction]Z, the fraction dropped), in UTC, as X.690's DER forms.
    func time(_ element: BERElement) throws(BERReader.Failure) -> Date { try Self.time(element, in: reader) }

    static func time(_ element: BERElement, in reader: BERReader) throws(BERReader.Failure) -> Date {
        let text = reader.bytes[element.content]
        var cursor = text.startIndex
        func number(_ digits: Int) throws(BERReader.Failure) -> Int {
            guard text.endIndex - cursor >= digits else { throw .malformed("signingTime is too short") }
            var value = 0
            for byte in text[cursor..<(cursor + digits)] {
                guard (0x30...0x39).contains(byte) else { throw .malformed("signingTime has a non-digit") }
                value = value * 10 + Int(byte - 0x30)
            }
            cursor += digits
            return value
        }
        let year: Int
        switch element.tag {
        case 0x17:
            let short = try number(2)
            year = short >= 50 ? 1900 + short : 2000 + short
        case 0x18: year = try number(4)
        default: throw .malformed("signingTime is neither UTCTime nor GeneralizedTime")
        }
        let (month, day, hour, minute, second) = (try number(2), try number(2), try number(2), try number(2), try number(2))
        if element.tag == 0x18, cursor < text.endIndex, text[cursor] == 0x2E {  // fraction: digits, the last not zero
            cursor += 1
            let digits = text[cursor...].prefix { (0x30...0x39).contains($0) }
            guard let last = digits.last, last != 0x30 else { throw .malformed("signingTime has an invalid fraction") }
            cursor = digits.endIndex
        }
        guard cursor == text.endIndex - 1, text.last == 0x5A else { throw .malformed("signingTime is not in UTC (…Z)") }
        guard (1...12).contains(month), (1...days(inMonth: month, of: year)).contains(day), hour < 24, minute < 60, second < 61
        else { throw .malformed("invalid signingTime") }
        let day0 = daysSinceEpoch(year: year, month: month, day: day)
        return Date(timeIntervalSince1970: TimeInterval(((day0 * 24 + hour) * 60 + minute) * 60 + second))
    }

    static func days(inMonth month: Int, of year: Int) -> Int {
        switch month {
        case 2: year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }

    /// Days from 1970-01-01 in the proleptic Gregorian calendar (H. Hinnant's days_from_civil).
    static func daysSinceEpoch(year: Int, month: Int, day: Int) -> Int {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    /// An identifier's dotted form, for messages.
    static func describe(_ content: ArraySlice<UInt8>) -> String {
        let der = [0x06, UInt8(truncatingIfNeeded: content.count)] + content
        guard content.count < 0x80, let oid = try? ASN1ObjectIdentifier(derEncoded: der) else { return "(unreadable)" }
        return String(describing: oid)
    }

    /// The content octets of the identifiers the verifier compares with.
    enum OID {
        static let signedData = octets(CMSObjectIdentifiers.signedData)
        static let contentType = octets(CMSObjectIdentifiers.contentType)
        static let messageDigest = octets(CMSObjectIdentifiers.messageDigest)
        static let signingTime = octets(CMSObjectIdentifiers.signingTime)
        static let sha256 = octets(CMSObjectIdentifiers.sha256)
        static let ecdsaWithSHA256 = octets(CMSObjectIdentifiers.ecdsaWithSHA256)
        static let rsaEncryption = octets(CMSObjectIdentifiers.rsaEncryption)
        static let sha256WithRSAEncryption = octets(CMSObjectIdentifiers.sha256WithRSAEncryption)

        /// DER of an identifier without its tag and (one-octet) length; empty, matching nothing, if it cannot be encoded.
        static func octets(_ oid: ASN1ObjectIdentifier) -> [UInt8] {
            var serializer = DER.Serializer()
            guard (try? serializer.serialize(oid)) != nil, serializer.serializedBytes.count > 2 else { return [] }
            return Array(serializer.serializedBytes.dropFirst(2))
        }
    }
}
