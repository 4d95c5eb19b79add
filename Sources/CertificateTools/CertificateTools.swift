import ApplePay
import COpenSSLShims
import Crypto
import Foundation
import SwiftASN1
import X509
import _CryptoExtras

/// A certificate tooling problem, with a message to act on.
public struct CertificateToolError: Error, Sendable, CustomStringConvertible {
    public var message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}

/// Which of Apple's two merchant certificates a certificate is.
public enum MerchantCertificateKind: String, Sendable, Codable {
    /// Merchant Identity: the TLS client certificate for merchant sessions and registration.
    case identity
    /// Payment Processing: the key tokens are encrypted to.
    case processing
    /// Order Type ID: signs Wallet order packages and authenticates their pushes to APNs.
    case orderType
    case other
}

/// What `orchard certs inspect` reports about one certificate.
public struct CertificateReport: Sendable, Codable, Equatable {
    public var subject: String
    public var issuer: String
    public var serialNumber: String
    public var sha256Fingerprint: String
    public var kind: MerchantCertificateKind
    /// The merchant ID in the subject's UID, as Apple writes it.
    public var merchantIdentifier: String?
    /// The hex SHA-256 in extension 1.2.840.113635.100.6.32.
    public var merchantIdentifierHash: String?
    /// Whether the extension's hash is the hash of `merchantIdentifier` (nil when either is missing).
    public var merchantIdentifierMatches: Bool?
    /// For a processing certificate, the base64 hash that tokens encrypted to its key carry in
    /// `header.publicKeyHash`: what to compare with a token that will not decrypt.
    public var publicKeyHash: String?
    public var keyType: String
    public var keyBits: Int?
    public var notValidBefore: Date
    public var notValidAfter: Date
    public var daysLeft: Int
    public var expired: Bool
}

/// What a file's private key is.
public struct PrivateKeyReport: Sendable, Codable, Equatable {
    public var type: String
    public var bits: Int?
    /// Whether it is the first certificate's key (nil when there is no certificate).
    public var matchesCertificate: Bool?

    public init(type: String, bits: Int?, matchesCertificate: Bool? = nil) {
        self.type = type
        self.bits = bits
        self.matchesCertificate = matchesCertificate
    }
}

/// What a certificate file holds.
public struct CertificateFileReport: Sendable, Codable, Equatable {
    /// "pem", "der" or "pkcs12".
    public var format: String
    public var certificates: [CertificateReport]
    public var privateKey: PrivateKeyReport?
    /// Things worth knowing: an encrypted key left unread, say.
    public var notes: [String]
}

/// Reads PEM, DER and PKCS#12 files and reports what Apple Pay cares about.
public enum CertificateInspector {
    static let userIDOID: ASN1ObjectIdentifier = [0, 9, 2342, 19_200_300, 100, 1, 1]
    static let passTypeOID: ASN1ObjectIdentifier = [1, 2, 840, 113_635, 100, 6, 1, 16]

    /// Inspects `bytes`; `password` opens a PKCS#12 file; `now` counts the days left.
    public static func inspect(_ bytes: [UInt8], password: String?, at now: Date) throws(CertificateToolError)
        -> CertificateFileReport
    {
        let text = String(decoding: bytes, as: UTF8.self)
        if text.contains("-----BEGIN ") { return try inspectPEM(text, password: password, at: now) }
        if let certificate = try? Certificate(derEncoded: bytes) {
            return CertificateFileReport(format: "der", certificates: [report(certificate, at: now)], privateKey: nil, notes: [])
        }
        return try inspectPKCS12(bytes, password: password, at: now)
    }

    static func inspectPEM(_ text: String, password: String?, at now: Date) throws(CertificateToolError) -> CertificateFileReport {
        let documents: [PEMDocument]
        do {
            // Traditional encrypted keys carry headers PEMDocument does not read; KeyReader reads them below.
            documents = try PEMDocument.parseMultiple(pemString: withoutHeaderBlocks(text))
        } catch {
            throw CertificateToolError("the PEM data cannot be read (\(error))")
        }
        var certificates: [Certificate] = []
        var notes: [String] = []
        for document in documents {
            switch document.discriminator {
            case "CERTIFICATE":
                do {
                    certificates.append(try Certificate(pemDocument: document))
                } catch {
                    throw CertificateToolError("a CERTIFICATE block is not a valid X.509 certificate")
                }
            case "PRIVATE KEY", "RSA PRIVATE KEY", "EC PRIVATE KEY", "ENCRYPTED PRIVATE KEY", "EC PARAMETERS": break
            case "CERTIFICATE REQUEST":
                notes.append("a certificate signing request: upload it to Apple, then import the certificate Apple returns")
            default:
                notes.append("a \(document.discriminator) block was skipped")
            }
        }
        var key: PrivateKeyReport?
        if text.contains("PRIVATE KEY-----") {
            do {
                let material = try KeyReader.privateKey(Array(text.utf8), password: password)
                key = PrivateKeyReport(
                    type: material.type == "EC" ? "EC P-\(material.bits)" : material.type, bits: material.bits,
                    matchesCertificate: certificates.first.map { matches(pem: material.pem, certificate: $0) ?? false })
            } catch {
                notes.append(
                    error.message.hasSuffix("give its password")
                        ? "the private key is encrypted: give --password-env to read it (serve reads it with identityKeyPassword)"
                        : error.message)
            }
        }
        guard !certificates.isEmpty || key != nil || !notes.isEmpty else { throw CertificateToolError("the file holds no PEM block") }
        return CertificateFileReport(format: "pem", certificates: certificates.map { report($0, at: now) }, privateKey: key, notes: notes)
    }

    /// The PEM text without blocks that carry RFC 1421 headers (`Proc-Type: 4,ENCRYPTED`).
    static func withoutHeaderBlocks(_ text: String) -> String {
        text.replacingOccurrences(
            of: "-----BEGIN ([A-Z0-9 ]+)-----\\s*\\n[A-Za-z-]+:[^\\n]*\\n[\\s\\S]*?-----END \\1-----", with: "", options: .regularExpression
        )
    }

    static func inspectPKCS12(_ bytes: [UInt8], password: String?, at now: Date) throws(CertificateToolError) -> CertificateFileReport {
        let contents: (certificates: [Certificate], key: PrivateKeyMaterial?, keyMatchesCertificate: Bool)
        do {
            contents = try KeyReader.pkcs12(bytes, password: password)
        } catch  where error.message.hasPrefix("not a PKCS#12 file") {
            throw CertificateToolError("not a PEM file, a DER certificate or a PKCS#12 file")
        } catch  where error.message.hasSuffix("needs a password") {
            throw CertificateToolError("the PKCS#12 file needs a password (--password)")
        }
        let key = contents.key.map {
            PrivateKeyReport(
                type: $0.type == "EC" ? "EC P-\($0.bits)" : $0.type, bits: $0.bits,
                matchesCertificate: contents.certificates.isEmpty ? nil : contents.keyMatchesCertificate)
        }
        return CertificateFileReport(
            format: "pkcs12", certificates: contents.certificates.map { report($0, at: now) }, privateKey: key, notes: [])
    }

    /// The length of the DER element at the start of `bytes` (tag, length and contents).
    static func derElementLength(_ bytes: ArraySlice<UInt8>) -> Int? {
        guard bytes.count >= 2 else { return nil }
        let first = bytes[bytes.startIndex + 1]
        if first < 0x80 { return 2 + Int(first) }
        let count = Int(first & 0x7F)
        guard (1...4).contains(count), bytes.count >= 2 + count else { return nil }
        let length = bytes[(bytes.startIndex + 2)..<(bytes.startIndex + 2 + count)].reduce(0) { $0 << 8 | Int($1) }
        return 2 + count + length
    }

    /// The report for one certificate.
    public static func report(_ certificate: Certificate, at now: Date) -> CertificateReport {
        let uid = attribute(userIDOID, in: certificate.subject)
        let hash = MerchantIdentifierExtension.value(in: certificate)?.uppercased()
        var serializer = DER.Serializer()
        let der = (try? serializer.serialize(certificate)).map { serializer.serializedBytes } ?? []
        let (keyType, bits) = describe(certificate.publicKey)
        let kind = kind(of: certificate)
        let keyHash = kind == .processing ? ProcessingKey.publicKeyHash(of: certificate).map { Data($0).base64EncodedString() } : nil
        return CertificateReport(
            subject: certificate.subject.description, issuer: certificate.issuer.description,
            serialNumber: certificate.serialNumber.description, sha256Fingerprint: Hex.encode(Array(SHA256.hash(data: der))).uppercased(),
            kind: kind, merchantIdentifier: uid, merchantIdentifierHash: hash,
            merchantIdentifierMatches: uid.flatMap { id in hash.map { $0 == MerchantIdentifierExtension.hash(of: id) } },
            publicKeyHash: keyHash, keyType: keyType,
            keyBits: bits, notValidBefore: certificate.notValidBefore, notValidAfter: certificate.notValidAfter,
            daysLeft: Int((certificate.notValidAfter.timeIntervalSince(now) / 86_400).rounded(.down)),
            expired: certificate.notValidAfter < now)
    }

    /// A certificate is known by what it can do, never by its name: Apple has issued Payment
    /// Processing certificates named `CN=Merchant ID: <id>`, as identity certificates are, and
    /// names are free text. An identity certificate is a TLS client certificate (the client-auth
    /// extended key usage); a processing certificate is one tokens are encrypted to (key
    /// agreement or key encipherment) that cannot authenticate a TLS client.
    ///
    /// An Order Type ID certificate is a TLS client certificate too, but Apple gives it no
    /// merchant-ID extension; it names its type in the subject's UID, as a Pass Type ID certificate
    /// does, and unlike one carries no Pass Type ID extension (1.2.840.113635.100.6.1.16).
    public static func kind(of certificate: Certificate) -> MerchantCertificateKind {
        if let usage = try? certificate.extensions.extendedKeyUsage, usage.contains(.clientAuth) {
            let isMerchant = certificate.extensions[oid: MerchantIdentifierExtension.oid] != nil
            let isPassType = certificate.extensions[oid: passTypeOID] != nil
            if !isMerchant && !isPassType && attribute(userIDOID, in: certificate.subject) != nil { return .orderType }
            return .identity
        }
        if let usage = try? certificate.extensions.keyUsage, usage.keyAgreement || usage.keyEncipherment { return .processing }
        return .other
    }

    /// The certificate's common name, for messages only (see ``kind(of:)``).
    public static func commonName(of certificate: Certificate) -> String? {
        attribute(.RDNAttributeType.commonName, in: certificate.subject)
    }

    static func attribute(_ oid: ASN1ObjectIdentifier, in name: DistinguishedName) -> String? {
        for rdn in name {
            for attribute in rdn where attribute.type == oid {
                return String(describing: attribute.value)
            }
        }
        return nil
    }

    /// "EC", "RSA" or "other": the family of a certificate's key, as ``PrivateKeyMaterial/type`` names it.
    public static func publicKeyType(_ key: Certificate.PublicKey) -> String {
        let (name, _) = describe(key)
        return name.hasPrefix("EC") ? "EC" : name
    }

    static func describe(_ key: Certificate.PublicKey) -> (String, Int?) {
        if P256.Signing.PublicKey(key) != nil { return ("EC P-256", 256) }
        if P384.Signing.PublicKey(key) != nil { return ("EC P-384", 384) }
        if let rsa = _RSA.Signing.PublicKey(key) { return ("RSA", rsa.keySizeInBits) }
        return ("other", nil)
    }

    static func matches(pem: String, certificate: Certificate) -> Bool? {
        guard let key = try? Certificate.PrivateKey(pemEncoded: pem) else { return nil }
        return key.publicKey == certificate.publicKey
    }
}

/// Keys and certificate signing requests for Apple's merchant certificates and the Order Type ID certificate.
public enum CertificateRequests {
    /// A new private key (PEM, PKCS#8) and CSR (PEM): RSA-2048 for identity and order type, EC P-256
    /// for processing. `merchantIdentifier` is the order type identifier for an order type.
    public static func make(kind: MerchantCertificateKind, merchantIdentifier: String) throws(CertificateToolError) -> (
        keyPEM: String, csrPEM: String
    ) {
        do {
            let key: Certificate.PrivateKey
            let keyPEM: String
            let algorithm: Certificate.SignatureAlgorithm
            switch kind {
            case .identity, .orderType:
                let rsa = try _RSA.Signing.PrivateKey(keySize: .bits2048)
                key = Certificate.PrivateKey(rsa)
                keyPEM = rsa.pkcs8PEMRepresentation
                algorithm = .sha256WithRSAEncryption
            case .processing:
                let ec = P256.Signing.PrivateKey()
                key = Certificate.PrivateKey(ec)
                keyPEM = ec.pemRepresentation
                algorithm = .ecdsaWithSHA256
            case .other:
                throw CertificateToolError("the kind must be identity, processing or orderType")
            }
            let subject = try DistinguishedName {
                CommonName(merchantIdentifier)
            }
            let csr = try CertificateSigningRequest(
                version: .v1, subject: subject, privateKey: key, attributes: CertificateSigningRequest.Attributes(),
                signatureAlgorithm: algorithm)
            return (keyPEM, try csr.serializeAsPEM().pemString)
        } catch let error as CertificateToolError {
            throw error
        } catch {
            throw CertificateToolError("cannot create the key and CSR (\(error))")
        }
    }

    /// Apple's `.cer`: DER, or PEM.
    public static func readCertificate(_ cer: [UInt8]) throws(CertificateToolError) -> Certificate {
        if let der = try? Certificate(derEncoded: cer) { return der }
        if let pem = try? Certificate(pemEncoded: String(decoding: cer, as: UTF8.self)) { return pem }
        throw CertificateToolError("the .cer file is not a DER or PEM certificate")
    }

    /// Apple's `.cer` (DER, or PEM) as PEM, after checking it belongs to `keyPEM`.
    public static func importCertificate(_ cer: [UInt8], keyPEM: String) throws(CertificateToolError) -> (
        pem: String, certificate: Certificate
    ) {
        let certificate = try readCertificate(cer)
        guard let key = try? Certificate.PrivateKey(pemEncoded: keyPEM) else {
            throw CertificateToolError("the key file is not an unencrypted PEM private key")
        }
        guard key.publicKey == certificate.publicKey else {
            throw CertificateToolError(
                "the key does not match the certificate: use the key whose CSR you uploaded for this certificate")
        }
        do {
            return (try certificate.serializeAsPEM().pemString + "\n", certificate)
        } catch {
            throw CertificateToolError("cannot write the certificate as PEM")
        }
    }
}
