import ApplePay
import Crypto
import Foundation
import SwiftASN1
import X509
import _CryptoExtras

/// A stand-in for Apple's token-signing chain: a root, an intermediate carrying
/// 1.2.840.113635.100.6.2.14 and leaves carrying 1.2.840.113635.100.6.29 (EC and RSA).
///
/// Orchard trusts this root only where a test or demo configuration names it.
public struct TestAppleChain: Sendable {
    public let root: TestCertificate
    public let intermediate: TestCertificate
    public let ecLeaf: TestCertificate
    public let rsaLeaf: TestCertificate

    static let fileNames = [
        "test-apple-root", "test-apple-intermediate", "test-apple-leaf-ec", "test-apple-leaf-rsa",
    ]

    /// Writes each certificate (`NAME.pem`) and key (`NAME.key`, 0600) into `directory`.
    public func write(to directory: URL) throws {
        for (name, pair) in zip(Self.fileNames, [root, intermediate, ecLeaf, rsaLeaf]) {
            try pair.write(
                certificateTo: directory.appendingPathComponent(name + ".pem").path,
                keyTo: directory.appendingPathComponent(name + ".key").path)
        }
    }

    /// Loads a chain written by ``write(to:)``.
    public static func load(from directory: URL) throws -> TestAppleChain {
        let pairs = try fileNames.map { name in
            try TestCertificate(
                certificatePEM: String(contentsOf: directory.appendingPathComponent(name + ".pem"), encoding: .utf8),
                keyPEM: String(contentsOf: directory.appendingPathComponent(name + ".key"), encoding: .utf8))
        }
        return TestAppleChain(root: pairs[0], intermediate: pairs[1], ecLeaf: pairs[2], rsaLeaf: pairs[3])
    }

    /// A new chain; `leafSerial` gives both leaves that serial number (random by default), to
    /// test serials whose DER needs a sign octet.
    public static func make(now: Date = Date(), leafSerial: Certificate.SerialNumber? = nil) throws -> TestAppleChain {
        let validFrom = now.addingTimeInterval(-30 * 86_400)
        let validTo = now.addingTimeInterval(2 * 365 * 86_400)
        let rootKey = Certificate.PrivateKey(P256.Signing.PrivateKey())
        let rootName = try DistinguishedName {
            OrganizationName("Orchard test PKI")
            CommonName("Test Apple Root CA (not Apple)")
        }
        let root = try Certificate(
            version: .v3, serialNumber: .init(), publicKey: rootKey.publicKey, notValidBefore: validFrom, notValidAfter: validTo,
            issuer: rootName, subject: rootName, signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.isCertificateAuthority(maxPathLength: nil))
                Critical(KeyUsage(keyCertSign: true, cRLSign: true))
            },
            issuerPrivateKey: rootKey)
        let rootPair = TestCertificate(certificate: root, privateKey: rootKey)
        let intermediate = try issue(
            name: "Test Apple Application Integration CA (not Apple)", key: Certificate.PrivateKey(P256.Signing.PrivateKey()),
            issuer: rootPair, isCA: true, marker: TokenVerifier.intermediateOID, validFrom: validFrom, validTo: validTo)
        let ecLeaf = try issue(
            name: "test-ecc-smp-broker-sign", key: Certificate.PrivateKey(P256.Signing.PrivateKey()), issuer: intermediate,
            isCA: false, marker: TokenVerifier.leafOID, validFrom: validFrom, validTo: validTo, serial: leafSerial)
        let rsaLeaf = try issue(
            name: "test-rsa-smp-broker-sign", key: Certificate.PrivateKey(try _RSA.Signing.PrivateKey(keySize: .bits2048)),
            issuer: intermediate, isCA: false, marker: TokenVerifier.leafOID, validFrom: validFrom, validTo: validTo,
            serial: leafSerial)
        return TestAppleChain(root: rootPair, intermediate: intermediate, ecLeaf: ecLeaf, rsaLeaf: rsaLeaf)
    }

    private static func issue(
        name: String, key: Certificate.PrivateKey, issuer: TestCertificate, isCA: Bool, marker: ASN1ObjectIdentifier,
        validFrom: Date, validTo: Date, serial: Certificate.SerialNumber? = nil
    ) throws -> TestCertificate {
        let subject = try DistinguishedName {
            OrganizationName("Orchard test PKI")
            CommonName(name)
        }
        var extensions = try Certificate.Extensions {
            if isCA {
                Critical(BasicConstraints.isCertificateAuthority(maxPathLength: 0))
                Critical(KeyUsage(keyCertSign: true, cRLSign: true))
            } else {
                Critical(BasicConstraints.notCertificateAuthority)
                Critical(KeyUsage(digitalSignature: true))
            }
        }
        var null = DER.Serializer()
        try null.serialize(ASN1Null())
        try extensions.append(Certificate.Extension(oid: marker, critical: false, value: null.serializedBytes[...]))
        let certificate = try Certificate(
            version: .v3, serialNumber: serial ?? .init(), publicKey: key.publicKey, notValidBefore: validFrom, notValidAfter: validTo,
            issuer: issuer.certificate.subject, subject: subject, signatureAlgorithm: .ecdsaWithSHA256, extensions: extensions,
            issuerPrivateKey: issuer.privateKey)
        return TestCertificate(certificate: certificate, privateKey: key)
    }
}

/// Mints real EC_v1 and RSA_v1 payment tokens, encrypted to a merchant's processing key
/// and signed (CMS) by a ``TestAppleChain``.
public struct TokenMinter: Sendable {
    public let chain: TestAppleChain

    public init(chain: TestAppleChain) {
        self.chain = chain
    }

    /// An EC_v1 token. `leadingZeroSecret` retries ephemeral keys until the ECDH secret
    /// starts with a zero byte (one key in 256 does), the case naive code truncates.
    public func mintEC(
        payload: [UInt8], to recipient: P256.KeyAgreement.PublicKey, merchantIdentifier: String,
        transactionId: [UInt8] = Self.randomTransactionId(), applicationDataHash: [UInt8]? = nil,
        signingTime: Date = Date(), leadingZeroSecret: Bool = false
    ) throws -> PaymentData {
        var ephemeral = P256.KeyAgreement.PrivateKey()
        while leadingZeroSecret, try ephemeral.sharedSecretFromKeyAgreement(with: recipient).withUnsafeBytes({ $0[0] }) != 0 {
            ephemeral = P256.KeyAgreement.PrivateKey()
        }
        let (keyMaterial, data) = try TokenEncryptor.ecV1(
            payload, to: recipient, merchantIdentifierHash: Array(SHA256.hash(data: Array(merchantIdentifier.utf8))),
            ephemeral: ephemeral)
        return try assemble(
            version: "EC_v1", keyMaterial: keyMaterial, isEC: true, data: data,
            publicKeyHash: Array(SHA256.hash(data: recipient.derRepresentation)), transactionId: transactionId,
            applicationDataHash: applicationDataHash, signingTime: signingTime)
    }

    /// An RSA_v1 token: a random AES-128 key wrapped with RSA-OAEP-SHA256.
    public func mintRSA(
        payload: [UInt8], to recipient: _RSA.Encryption.PublicKey, transactionId: [UInt8] = Self.randomTransactionId(),
        applicationDataHash: [UInt8]? = nil, signingTime: Date = Date()
    ) throws -> PaymentData {
        let (wrapped, data) = try TokenEncryptor.rsaV1(payload, to: recipient)
        return try assemble(
            version: "RSA_v1", keyMaterial: wrapped, isEC: false, data: data,
            publicKeyHash: Array(SHA256.hash(data: recipient.derRepresentation)), transactionId: transactionId,
            applicationDataHash: applicationDataHash, signingTime: signingTime)
    }

    /// A token event's `encryptedTokenMetadata`: `payload` (``tokenMetadataPayload(expirationDate:mpan:mpanId:)``)
    /// encrypted to `recipient` (EC_v1 for a P-256 key, RSA_v1 for an RSA one) for `merchantIdentifier`,
    /// and signed over key material ‖ data by the chain's EC or RSA leaf, as Apple signs it.
    public func mintTokenMetadata(
        payload: [UInt8], to recipient: Certificate.PublicKey, merchantIdentifier: String, signingTime: Date = Date()
    ) throws -> EncryptedTokenMetadata {
        var metadata = try TokenEncryptor.encryptTokenMetadata(
            payload, to: recipient, merchantIdentifierHash: Array(SHA256.hash(data: Array(merchantIdentifier.utf8))))
        let isEC = metadata.ephemeralPublicKey != nil
        guard let keyMaterial = (metadata.ephemeralPublicKey ?? metadata.wrappedKey).flatMap({ Data(base64Encoded: $0) }),
            let data = metadata.data.flatMap({ Data(base64Encoded: $0) })
        else { throw ApplePayError(.malformedToken, "the encrypted metadata lacks its key material or data") }
        let signature = try CMSWriter.signedData(
            content: Array(keyMaterial) + Array(data), signingTime: signingTime, leaf: isEC ? chain.ecLeaf : chain.rsaLeaf,
            intermediate: chain.intermediate.certificate)
        metadata.signature = Data(signature).base64EncodedString()
        return metadata
    }

    /// EC_v1 `encryptedTokenMetadata` for a P-256 processing key.
    public func mintTokenMetadata(
        payload: [UInt8], to recipient: P256.KeyAgreement.PublicKey, merchantIdentifier: String, signingTime: Date = Date()
    ) throws -> EncryptedTokenMetadata {
        try mintTokenMetadata(
            payload: payload, to: try Certificate.PublicKey(derEncoded: Array(recipient.derRepresentation)),
            merchantIdentifier: merchantIdentifier, signingTime: signingTime)
    }

    /// RSA_v1 `encryptedTokenMetadata` for an RSA processing key (RSA_v1 has no key derivation, so no merchant ID).
    public func mintTokenMetadata(payload: [UInt8], to recipient: _RSA.Encryption.PublicKey, signingTime: Date = Date()) throws
        -> EncryptedTokenMetadata
    {
        try mintTokenMetadata(
            payload: payload, to: try Certificate.PublicKey(derEncoded: Array(recipient.derRepresentation)), merchantIdentifier: "",
            signingTime: signingTime)
    }

    /// Apple's `TokenMetadata` JSON: the MPAN's expiry (`YYMMDD`, the month's last day), the MPAN
    /// and, when it changed, the new MPAN's identifier.
    public static func tokenMetadataPayload(expirationDate: String, mpan: String, mpanId: String? = nil) -> [UInt8] {
        struct Payload: Encodable {
            var expirationDate: String
            var mpan: String
            var mpanId: String?
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return Array((try? encoder.encode(Payload(expirationDate: expirationDate, mpan: mpan, mpanId: mpanId))) ?? Data())
    }

    public static func randomTransactionId() -> [UInt8] {
        (0..<32).map { _ in UInt8.random(in: 0...255) }
    }

    /// A plausible decrypted payload for an amount in minor units and an ISO 4217 numeric currency.
    public static func samplePayload(amount: Int, currencyCode: String = "978", pan: String = "4111111111111111") -> [UInt8] {
        let cryptogram = Data((0..<20).map { _ in UInt8.random(in: 0...255) }).base64EncodedString()
        return Array(
            """
            {"applicationPrimaryAccountNumber":"\(pan)","applicationExpirationDate":"291231","currencyCode":"\(currencyCode)",\
            "transactionAmount":\(amount),"deviceManufacturerIdentifier":"040010030273","paymentDataType":"3DSecure",\
            "paymentData":{"onlinePaymentCryptogram":"\(cryptogram)","eciIndicator":"7"}}
            """.utf8)
    }

    /// A merchant-token payload (recurring, deferred, automatic reload): the account number is an
    /// MPAN, with the token's identifier and metadata in the shape Apple's token events use.
    public static func merchantTokenPayload(
        amount: Int, currencyCode: String = "978", mpan: String = "5204240750197840", merchantTokenIdentifier: String,
        fpanSuffix: String = "4242"
    ) -> [UInt8] {
        let cryptogram = Data((0..<20).map { _ in UInt8.random(in: 0...255) }).base64EncodedString()
        return Array(
            """
            {"applicationPrimaryAccountNumber":"\(mpan)","applicationExpirationDate":"301231","currencyCode":"\(currencyCode)",\
            "transactionAmount":\(amount),"deviceManufacturerIdentifier":"040010030273","paymentDataType":"3DSecure",\
            "paymentData":{"onlinePaymentCryptogram":"\(cryptogram)","eciIndicator":"7"},\
            "merchantTokenIdentifier":"\(merchantTokenIdentifier)",\
            "merchantTokenMetadata":{"cardArt":[{"name":"card","type":"image/png","url":"https://example.invalid/art.png"}],\
            "cardMetadata":{"cardCountry":"FR","expirationDate":"20301231","fpanSuffix":"\(fpanSuffix)",\
            "shortDescription":"Test Card"}}}
            """.utf8)
    }

    private func assemble(
        version: String, keyMaterial: [UInt8], isEC: Bool, data: [UInt8], publicKeyHash: [UInt8], transactionId: [UInt8],
        applicationDataHash: [UInt8]?, signingTime: Date
    ) throws -> PaymentData {
        let content = keyMaterial + data + transactionId + (applicationDataHash ?? [])
        let leaf = isEC ? chain.ecLeaf : chain.rsaLeaf
        let signature = try CMSWriter.signedData(
            content: content, signingTime: signingTime, leaf: leaf, intermediate: chain.intermediate.certificate)
        return PaymentData(
            version: version, data: Data(data).base64EncodedString(), signature: Data(signature).base64EncodedString(),
            header: .init(
                ephemeralPublicKey: isEC ? Data(keyMaterial).base64EncodedString() : nil,
                wrappedKey: isEC ? nil : Data(keyMaterial).base64EncodedString(),
                publicKeyHash: Data(publicKeyHash).base64EncodedString(), transactionId: Hex.encode(transactionId),
                applicationData: applicationDataHash.map { Hex.encode($0) }))
    }
}

/// Writes a detached CMS SignedData (DER) the way Apple's token signatures are shaped.
enum CMSWriter {
    typealias OID = CMSObjectIdentifiers
    static let context0 = ASN1Identifier(tagWithNumber: 0, tagClass: .contextSpecific)

    static func signedData(content: [UInt8], signingTime: Date, leaf: TestCertificate, intermediate: Certificate) throws -> [UInt8] {
        // Signed attributes: a DER SET OF, sorted by encoding.
        let attributes = try [
            attribute(OID.contentType) { try $0.serialize(OID.data) },
            attribute(OID.signingTime) { try $0.serialize(try utcTime(signingTime)) },
            attribute(OID.messageDigest) { try $0.serialize(ASN1OctetString(contentBytes: Array(SHA256.hash(data: content))[...])) },
        ].sorted { $0.lexicographicallyPrecedes($1) }
        let signedAttributes = [0x31] + length(attributes.reduce(0) { $0 + $1.count }) + attributes.flatMap { $0 }
        let keyPEM = try leaf.keyPEM
        let isEC = P256.Signing.PublicKey(leaf.certificate.publicKey) != nil
        let signatureBytes: [UInt8]
        if isEC {
            let key = try P256.Signing.PrivateKey(pemRepresentation: keyPEM)
            signatureBytes = Array(try key.signature(for: signedAttributes).derRepresentation)
        } else {
            let key = try _RSA.Signing.PrivateKey(pemRepresentation: keyPEM)
            signatureBytes = Array(try key.signature(for: signedAttributes, padding: .insecurePKCS1v1_5).rawRepresentation)
        }

        var serializer = DER.Serializer()
        try serializer.appendConstructedNode(identifier: .sequence) { info in
            try info.serialize(OID.signedData)
            try info.appendConstructedNode(identifier: context0) { wrapper in
                try wrapper.appendConstructedNode(identifier: .sequence) { body in
                    try body.serialize(1)
                    try body.appendConstructedNode(identifier: .set) { try algorithm(&$0, OID.sha256, null: true) }
                    try body.appendConstructedNode(identifier: .sequence) { try $0.serialize(OID.data) }
                    try body.appendConstructedNode(identifier: context0) { certificates in
                        try certificates.serialize(leaf.certificate)
                        try certificates.serialize(intermediate)
                    }
                    try body.appendConstructedNode(identifier: .set) { signers in
                        try signers.appendConstructedNode(identifier: .sequence) { signer in
                            try signer.serialize(1)
                            try signer.appendConstructedNode(identifier: .sequence) { sid in
                                try sid.serialize(leaf.certificate.issuer)
                                // As an unsigned INTEGER, as the certificate holds it: a serial whose top bit is
                                // set gets its 00 sign octet, as Apple's signer (and any DER encoder) writes it.
                                try sid.serialize(leaf.certificate.serialNumber.bytes)
                            }
                            try algorithm(&signer, OID.sha256, null: true)
                            signer.serializeRawBytes([0xA0] + signedAttributes.dropFirst())
                            try algorithm(&signer, isEC ? OID.ecdsaWithSHA256 : OID.rsaEncryption, null: !isEC)
                            try signer.serialize(ASN1OctetString(contentBytes: signatureBytes[...]))
                        }
                    }
                }
            }
        }
        return serializer.serializedBytes
    }

    private static func algorithm(_ serializer: inout DER.Serializer, _ oid: ASN1ObjectIdentifier, null: Bool) throws {
        try serializer.appendConstructedNode(identifier: .sequence) { algorithm in
            try algorithm.serialize(oid)
            if null { try algorithm.serialize(ASN1Null()) }
        }
    }

    private static func attribute(_ oid: ASN1ObjectIdentifier, value: (inout DER.Serializer) throws -> Void) throws -> [UInt8] {
        var serializer = DER.Serializer()
        try serializer.appendConstructedNode(identifier: .sequence) { attribute in
            try attribute.serialize(oid)
            try attribute.appendConstructedNode(identifier: .set) { try value(&$0) }
        }
        return serializer.serializedBytes
    }

    private static func utcTime(_ date: Date) throws -> UTCTime {
        let parts = Calendar(identifier: .gregorian).dateComponents(in: TimeZone(identifier: "UTC")!, from: date)
        return try UTCTime(
            year: parts.year!, month: parts.month!, day: parts.day!, hours: parts.hour!, minutes: parts.minute!, seconds: parts.second!)
    }

    private static func length(_ count: Int) -> [UInt8] {
        if count < 0x80 { return [UInt8(count)] }
        var bytes: [UInt8] = []
        var remaining = count
        while remaining > 0 {
            bytes.insert(UInt8(remaining & 0xFF), at: 0)
            remaining >>= 8
        }
        return [0x80 | UInt8(bytes.count)] + bytes
    }
}
