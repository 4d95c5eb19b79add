import COpenSSLShims
import Foundation
import SwiftASN1
import X509

/// A private key as read, whatever its format, held as unencrypted PKCS#8 in memory only.
public struct PrivateKeyMaterial: Sendable {
    /// "RSA", "EC" or "other".
    public let type: String
    public let bits: Int
    let pkcs8: [UInt8]

    /// The key as a PKCS#8 PEM block (`PRIVATE KEY`): what swift-crypto and libcurl read.
    public var pem: String { PEMDocument(type: "PRIVATE KEY", derBytes: pkcs8).pemString }

    /// "an EC P-256 key", "an RSA 2048-bit key".
    public var description: String { type == "EC" ? "an EC P-\(bits) key" : type == "RSA" ? "an RSA \(bits)-bit key" : "a \(type) key" }
}

/// One reader for the certificates and keys people have: PEM with any extra blocks (`EC
/// PARAMETERS`, several certificates), SEC1, PKCS#1, PKCS#8, encrypted PKCS#8, traditional
/// encrypted PEM, DER, and PKCS#12 (modern and legacy). Every refusal says what was found instead.
public enum KeyReader {
    /// A private key from PEM or DER; `password` opens an encrypted one.
    public static func privateKey(_ bytes: [UInt8], password: String?) throws(CertificateToolError) -> PrivateKeyMaterial {
        var key = orchard_private_key()
        var message = [CChar](repeating: 0, count: 256)
        let result = bytes.withUnsafeBufferPointer { buffer in
            orchard_private_key_read(buffer.baseAddress, buffer.count, password, &key, &message, message.count)
        }
        defer { orchard_private_key_free(&key) }
        switch Int(result) {
        case Int(ORCHARD_KEY_OK):
            guard let der = key.pkcs8 else { throw CertificateToolError("the private key cannot be exported") }
            let type = withUnsafeBytes(of: key.key_type) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            return PrivateKeyMaterial(
                type: type, bits: Int(key.key_bits), pkcs8: Array(UnsafeBufferPointer(start: der, count: key.pkcs8_length)))
        case Int(ORCHARD_KEY_NEEDS_PASSWORD):
            throw CertificateToolError("the private key is encrypted: give its password")
        case Int(ORCHARD_KEY_BAD_PASSWORD):
            throw CertificateToolError("wrong password for the private key")
        default:
            throw CertificateToolError("no private key here: \(describeContents(bytes))")
        }
    }

    /// The certificates in PEM (every `CERTIFICATE` block, in file order) or one DER certificate.
    public static func certificates(_ bytes: [UInt8]) throws(CertificateToolError) -> [Certificate] {
        let text = String(decoding: bytes, as: UTF8.self)
        if text.contains("-----BEGIN ") {
            let documents = (try? PEMDocument.parseMultiple(pemString: text)) ?? []
            var certificates: [Certificate] = []
            for document in documents where document.discriminator == "CERTIFICATE" {
                guard let certificate = try? Certificate(pemDocument: document) else {
                    throw CertificateToolError("a CERTIFICATE block is not a valid X.509 certificate")
                }
                certificates.append(certificate)
            }
            guard !certificates.isEmpty else { throw CertificateToolError("no certificate here: \(describeContents(bytes))") }
            return certificates
        }
        guard let certificate = try? Certificate(derEncoded: bytes) else {
            throw CertificateToolError("no certificate here: \(describeContents(bytes))")
        }
        return [certificate]
    }

    /// A PKCS#12 file's certificates (the key's own first) and key.
    public static func pkcs12(_ bytes: [UInt8], password: String?) throws(CertificateToolError) -> (
        certificates: [Certificate], key: PrivateKeyMaterial?, keyMatchesCertificate: Bool
    ) {
        var contents = orchard_pkcs12_contents()
        var message = [CChar](repeating: 0, count: 256)
        let result = bytes.withUnsafeBufferPointer { buffer in
            orchard_pkcs12_parse(buffer.baseAddress, buffer.count, password, &contents, &message, message.count)
        }
        defer { orchard_pkcs12_free(&contents) }
        let reason = String(decoding: message.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        switch Int(result) {
        case Int(ORCHARD_PKCS12_OK): break
        case Int(ORCHARD_PKCS12_NOT_PKCS12): throw CertificateToolError("not a PKCS#12 file: \(describeContents(bytes))")
        case Int(ORCHARD_PKCS12_BAD_PASSWORD):
            throw CertificateToolError(password == nil ? "the PKCS#12 file needs a password" : "wrong password for the PKCS#12 file")
        default: throw CertificateToolError("the PKCS#12 file cannot be read: \(reason)")
        }
        var certificates: [Certificate] = []
        if let leaf = contents.certificate {
            certificates.append(try der(Array(UnsafeBufferPointer(start: leaf, count: contents.certificate_length))))
        }
        if let chain = contents.chain {
            var rest = ArraySlice(UnsafeBufferPointer(start: chain, count: contents.chain_length))
            while !rest.isEmpty {
                guard let length = CertificateInspector.derElementLength(rest), length <= rest.count else {
                    throw CertificateToolError("the PKCS#12 chain cannot be read")
                }
                certificates.append(try der(Array(rest.prefix(length))))
                rest = rest.dropFirst(length)
            }
        }
        let type = withUnsafeBytes(of: contents.key_type) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        let key = contents.key_pkcs8.map {
            PrivateKeyMaterial(
                type: type, bits: Int(contents.key_bits), pkcs8: Array(UnsafeBufferPointer(start: $0, count: contents.key_pkcs8_length)))
        }
        return (certificates, key, contents.key_matches_certificate == 1)
    }

    /// Certificates as PEM, in order.
    public static func pem(_ certificates: [Certificate]) -> String {
        certificates.compactMap { try? $0.serializeAsPEM().pemString }.joined(separator: "\n") + "\n"
    }

    /// Whether the bytes look like a PKCS#12 file (a DER SEQUENCE that OpenSSL reads as one).
    public static func isPKCS12(_ bytes: [UInt8]) -> Bool {
        var contents = orchard_pkcs12_contents()
        var message = [CChar](repeating: 0, count: 64)
        let result = bytes.withUnsafeBufferPointer { orchard_pkcs12_parse($0.baseAddress, $0.count, nil, &contents, &message, 64) }
        orchard_pkcs12_free(&contents)
        return Int(result) != Int(ORCHARD_PKCS12_NOT_PKCS12)
    }

    /// What a file holds, in words, for a refusal: "a certificate, not a private key".
    static func describeContents(_ bytes: [UInt8]) -> String {
        let text = String(decoding: bytes.prefix(64 * 1024), as: UTF8.self)
        if bytes.isEmpty { return "the file is empty" }
        if text.contains("-----BEGIN CERTIFICATE REQUEST-----") {
            return "a certificate signing request (send it to Apple, then use the certificate Apple returns)"
        }
        if text.contains("-----BEGIN CERTIFICATE-----") && !text.contains("PRIVATE KEY-----") { return "a certificate, not a private key" }
        if text.contains("PRIVATE KEY-----") && !text.contains("-----BEGIN CERTIFICATE-----") { return "a private key, not a certificate" }
        if text.contains("-----BEGIN ") { return "PEM without a usable block" }
        if (try? Certificate(derEncoded: bytes)) != nil { return "a DER certificate, not a private key" }
        if isPKCS12(bytes) { return "a PKCS#12 (.p12) file: configure it as a PKCS#12 identity with its password" }
        return "neither PEM, DER nor PKCS#12"
    }

    static func der(_ bytes: [UInt8]) throws(CertificateToolError) -> Certificate {
        do {
            return try Certificate(derEncoded: bytes)
        } catch {
            throw CertificateToolError("a certificate in the PKCS#12 file is not valid X.509")
        }
    }
}
