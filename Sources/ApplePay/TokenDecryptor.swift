import COpenSSLShims
import Crypto
import Foundation
import SwiftASN1
import X509
import _CryptoExtras

/// A payment processing key, with what decryption needs to know about it: a private key
/// Orchard holds, or only the certificate of one the processor holds (made at Apple on the
/// processor's CSR), which Orchard can name and check tokens against but never decrypt with.
public struct ProcessingKey: Sendable {
    enum Key: Sendable {
        case ec(P256.KeyAgreement.PrivateKey)
        case rsa(OpenSSLRSAKey)
        /// The processor holds the private key of this scheme's certificate.
        case heldByProcessor(PaymentData.Scheme)
    }

    let key: Key
    /// SHA-256 of the public key's SubjectPublicKeyInfo: what tokens name in `publicKeyHash`.
    public let publicKeyHash: [UInt8]
    /// SHA-256 of the merchant identifier: the EC_v1 KDF's partyV.
    public let merchantIdentifierHash: [UInt8]
    /// The public key's SubjectPublicKeyInfo (DER), for ``publicKey``.
    let publicKeyInfo: [UInt8]
    /// The Payment Processing certificate, when the key was loaded with one (for expiry checks).
    public private(set) var certificate: Certificate?

    /// A key whose merchant ID comes from its processing certificate's 1.2.840.113635.100.6.32 extension.
    public init(privateKeyPEM: String, certificatePEM: String) throws(ApplePayError) {
        let (certificate, hash) = try Self.readCertificate(certificatePEM, withoutExtension: "; pass the merchant ID instead")
        try self.init(privateKeyPEM: privateKeyPEM, merchantIdentifierHash: hash)
        guard Self.publicKeyHash(of: certificate) == publicKeyHash else {
            throw ApplePayError(.keyMismatch, "the processing private key does not match the processing certificate")
        }
        self.certificate = certificate
    }

    /// Only the processing certificate: the processor holds its private key and decrypts. Its
    /// merchant ID comes from the certificate's 1.2.840.113635.100.6.32 extension.
    public init(processorHeldCertificatePEM certificatePEM: String) throws(ApplePayError) {
        let (certificate, hash) = try Self.readCertificate(certificatePEM, withoutExtension: "")
        let scheme: PaymentData.Scheme
        if P256.Signing.PublicKey(certificate.publicKey) != nil {
            scheme = .ecV1
        } else if _RSA.Signing.PublicKey(certificate.publicKey) != nil {
            scheme = .rsaV1
        } else {
            throw ApplePayError(.invalidCertificate, "the processing certificate's key is neither EC P-256 nor RSA")
        }
        guard let keyHash = Self.publicKeyHash(of: certificate) else {
            throw ApplePayError(.invalidCertificate, "the processing certificate's key cannot be read")
        }
        key = .heldByProcessor(scheme)
        publicKeyHash = keyHash
        merchantIdentifierHash = hash
        publicKeyInfo = []
        self.certificate = certificate
    }

    /// A processing certificate and the merchant-ID hash in its 1.2.840.113635.100.6.32 extension;
    /// `withoutExtension` ends the refusal of one that has none.
    static func readCertificate(_ pem: String, withoutExtension: String) throws(ApplePayError) -> (Certificate, [UInt8]) {
        let certificate: Certificate
        do {
            certificate = try Certificate(pemEncoded: pem)
        } catch {
            throw ApplePayError(.invalidCertificate, "the processing certificate is not a readable PEM certificate")
        }
        guard let hex = MerchantIdentifierExtension.value(in: certificate), let hash = Hex.decode(hex), hash.count == 32 else {
            throw ApplePayError(
                .invalidCertificate, "the processing certificate has no merchant-ID extension (1.2.840.113635.100.6.32)\(withoutExtension)")
        }
        return (certificate, hash)
    }

    /// The scheme of the tokens this key's holder decrypts, when the processor holds it; nil when Orchard does.
    public var processorHeldScheme: PaymentData.Scheme? {
        if case .heldByProcessor(let scheme) = key { return scheme }
        return nil
    }

    /// Whether the key is `merchantIdentifier`'s: the hash EC_v1 decryption uses is that ID's.
    public func isFor(merchantIdentifier: String) -> Bool {
        merchantIdentifierHash == Array(SHA256.hash(data: Array(merchantIdentifier.utf8)))
    }

    /// The token scheme this key decrypts: EC_v1 for an EC P-256 key, RSA_v1 for an RSA key.
    public var scheme: PaymentData.Scheme {
        switch key {
        case .ec: .ecV1
        case .rsa: .rsaV1
        case .heldByProcessor(let scheme): scheme
        }
    }

    /// What a token encrypted to `certificate`'s key names in `header.publicKeyHash`: the SHA-256
    /// of the key's SubjectPublicKeyInfo (DER). Nil for a key that cannot be serialized.
    public static func publicKeyHash(of certificate: Certificate) -> [UInt8]? {
        guard let der = try? certificate.publicKey.serializeAsPEM().derBytes else { return nil }
        return Array(SHA256.hash(data: der))
    }

    /// A key for a merchant ID given as a string (`merchant.com.example`).
    public init(privateKeyPEM: String, merchantIdentifier: String) throws(ApplePayError) {
        try self.init(privateKeyPEM: privateKeyPEM, merchantIdentifierHash: Array(SHA256.hash(data: Array(merchantIdentifier.utf8))))
    }

    init(privateKeyPEM: String, merchantIdentifierHash: [UInt8]) throws(ApplePayError) {
        if let ec = try? P256.KeyAgreement.PrivateKey(pemRepresentation: privateKeyPEM) {
            key = .ec(ec)
            publicKeyInfo = Array(ec.publicKey.derRepresentation)
            publicKeyHash = Array(SHA256.hash(data: publicKeyInfo))
        } else if let rsa = try? _RSA.Encryption.PrivateKey(pemRepresentation: privateKeyPEM) {
            guard let openSSL = OpenSSLRSAKey(der: Array(rsa.derRepresentation)) else {
                throw ApplePayError(.invalidPrivateKey, "OpenSSL cannot read the RSA processing key")
            }
            key = .rsa(openSSL)
            publicKeyInfo = Array(rsa.publicKey.derRepresentation)
            publicKeyHash = Array(SHA256.hash(data: publicKeyInfo))
        } else {
            throw ApplePayError(.invalidPrivateKey, "the processing key is not a PEM EC P-256 or RSA private key (SEC1 or PKCS#8)")
        }
        self.merchantIdentifierHash = merchantIdentifierHash
    }
}

/// An RSA private key in OpenSSL, which unwraps RSA_v1 keys about twice as fast as BoringSSL
/// where the CPU has AVX-512 IFMA (openssl speed rsa2048 against swift-crypto, same machine).
final class OpenSSLRSAKey: Sendable {
    // The key is immutable once read and OpenSSL's operations on it are thread-safe (each
    // call has its own context), so the pointer may be shared.
    nonisolated(unsafe) private let key: OpaquePointer

    init?(der: [UInt8]) {
        guard let key = der.withUnsafeBufferPointer({ orchard_rsa_key_read($0.baseAddress, $0.count) }) else { return nil }
        self.key = key
    }

    deinit { orchard_rsa_key_free(key) }

    /// RSAES-OAEP with SHA-256 (RSA_v1); nil when the bytes do not decrypt with this key.
    func decryptOAEPSHA256(_ ciphertext: [UInt8]) -> [UInt8]? {
        var out = [UInt8](repeating: 0, count: 1024)  // room for keys up to 8192 bits
        defer { out.withUnsafeMutableBytes { _ = $0.initializeMemory(as: UInt8.self, repeating: 0) } }
        let length = ciphertext.withUnsafeBufferPointer { input in
            out.withUnsafeMutableBufferPointer { output in
                orchard_rsa_oaep_sha256_decrypt(key, input.baseAddress, input.count, output.baseAddress, output.count)
            }
        }
        guard length >= 0, length <= out.count else { return nil }
        return Array(out[0..<length])
    }
}

/// Decrypts EC_v1 and RSA_v1 tokens with whichever configured key the token names.
public struct TokenDecryptor: Sendable {
    public let keys: [ProcessingKey]

    public init(keys: [ProcessingKey]) {
        self.keys = keys
    }

    /// The refusal of a token encrypted to a key the merchant does not list, naming the hash the
    /// token carries and the ones configured (base64, as tokens write them): the commonest real
    /// decryption failure is a processing certificate activated at Apple that Orchard was not given.
    public static func unknownKey(_ tokenHash: [UInt8], configured: [[UInt8]]) -> ApplePayError {
        let listed =
            configured.isEmpty
            ? "this merchant has no processing keys"
            : "this merchant's processing keys have \(configured.map { Data($0).base64EncodedString() }.joined(separator: ", "))"
        return ApplePayError(
            .unknownProcessingKey,
            """
            the token is encrypted to the processing key with publicKeyHash \(Data(tokenHash).base64EncodedString()), and \
            \(listed): configure the key of the processing certificate active at Apple
            """)
    }

    /// The configured key the token names by its `publicKeyHash`, or the refusal naming both.
    public func key(for token: PaymentData.Decoded) -> ProcessingKey? {
        keys.first(where: { $0.publicKeyHash == token.publicKeyHash })
    }

    /// The plaintext JSON Apple encrypted, byte for byte, and its parsed form.
    public func decrypt(_ token: PaymentData.Decoded) throws(ApplePayError) -> DecryptedPayment {
        try DecryptedPayment(json: try plaintext(token))
    }

    /// The bytes Apple encrypted, opened with the configured key the token names: a payment's
    /// JSON, or a token event's metadata, which Apple encrypts the same way.
    public func plaintext(_ token: PaymentData.Decoded) throws(ApplePayError) -> [UInt8] {
        guard let key = key(for: token) else {
            throw Self.unknownKey(token.publicKeyHash, configured: keys.map(\.publicKeyHash))
        }
        let symmetricKey: SymmetricKey
        switch (token.scheme, key.key) {
        case (_, .heldByProcessor):
            throw ApplePayError(.keyHeldByProcessor, "the processor holds this processing key: only it can decrypt the token")
        case (.ecV1, .ec(let privateKey)):
            let ephemeral: P256.KeyAgreement.PublicKey
            let secret: SharedSecret
            do {
                ephemeral = try P256.KeyAgreement.PublicKey(derRepresentation: token.keyMaterial)
                secret = try privateKey.sharedSecretFromKeyAgreement(with: ephemeral)
            } catch {
                throw ApplePayError(.keyAgreementFailed, "the token's ephemeral public key is not a valid P-256 key")
            }
            // The shared secret is always 32 bytes, leading zeros included.
            let z = secret.withUnsafeBytes { Array($0) }
            symmetricKey = SymmetricKey(data: Self.deriveKey(sharedSecret: z, partyV: key.merchantIdentifierHash))
        case (.rsaV1, .rsa(let privateKey)):
            guard let unwrapped = privateKey.decryptOAEPSHA256(token.keyMaterial), unwrapped.count == 16 else {
                throw ApplePayError(.keyAgreementFailed, "the wrapped key does not unwrap with this RSA processing key")
            }
            symmetricKey = SymmetricKey(data: unwrapped)
        default:
            throw ApplePayError(
                .keyAgreementFailed, "a \(token.scheme.rawValue) token needs an \(token.scheme == .ecV1 ? "EC" : "RSA") processing key")
        }
        let plaintext: Data
        do {
            let box = try AES.GCM.SealedBox(
                nonce: AES.GCM.Nonce(data: [UInt8](repeating: 0, count: 16)),
                ciphertext: token.data.dropLast(16),
                tag: token.data.suffix(16))
            plaintext = try AES.GCM.open(box, using: symmetricKey)
        } catch {
            throw ApplePayError(.decryptionFailed, "the payment data does not decrypt: wrong key or merchant ID, or the data was altered")
        }
        return Array(plaintext)
    }

    /// NIST SP 800-56A single-step KDF with SHA-256, as Apple specifies for EC_v1.
    static func deriveKey(sharedSecret: [UInt8], partyV: [UInt8]) -> [UInt8] {
        var input: [UInt8] = [0, 0, 0, 1]
        input += sharedSecret
        input += [0x0D] + Array("id-aes256-GCM".utf8)
        input += Array("Apple".utf8)
        input += partyV
        return Array(SHA256.hash(data: input))
    }
}

/// The decrypted payment. Its description never shows the account number, expiry or cryptogram.
public struct DecryptedPayment: Sendable, CustomStringConvertible {
    public struct Fields: Sendable, Decodable {
        public var applicationPrimaryAccountNumber: String
        public var applicationExpirationDate: String
        public var currencyCode: String
        public var transactionAmount: Int64
        public var cardholderName: String?
        public var deviceManufacturerIdentifier: String?
        public var paymentDataType: String
        /// The 3-D Secure credentials: the cryptogram and, for some networks, the ECI.
        public var paymentData: Credentials?
        /// A merchant token's identifier at the network (recurring, deferred and automatic-reload
        /// payments): the account number is then an MPAN, and this is what Apple's token events name.
        public var merchantTokenIdentifier: String?
        /// The merchant token's card art and card details; nil when absent or in a shape not known yet.
        public var merchantTokenMetadata: MerchantTokenMetadata?
        /// A multi-token payment's sub-merchant cryptograms (Apple Pay JS `multiTokenContexts`),
        /// which Orchard never asks for; kept so such a token is recognised, nil when absent.
        public var authenticationResponses: [AuthenticationResponse]?

        enum CodingKeys: String, CodingKey {
            case applicationPrimaryAccountNumber, applicationExpirationDate, currencyCode, transactionAmount, cardholderName
            case deviceManufacturerIdentifier, paymentDataType, paymentData, merchantTokenIdentifier, merchantTokenMetadata
            case authenticationResponses
        }

        public init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            applicationPrimaryAccountNumber = try container.decode(String.self, forKey: .applicationPrimaryAccountNumber)
            applicationExpirationDate = try container.decode(String.self, forKey: .applicationExpirationDate)
            currencyCode = try container.decode(String.self, forKey: .currencyCode)
            transactionAmount = try container.decode(Int64.self, forKey: .transactionAmount)
            cardholderName = try container.decodeIfPresent(String.self, forKey: .cardholderName)
            deviceManufacturerIdentifier = try container.decodeIfPresent(String.self, forKey: .deviceManufacturerIdentifier)
            paymentDataType = try container.decode(String.self, forKey: .paymentDataType)
            paymentData = try container.decodeIfPresent(Credentials.self, forKey: .paymentData)
            merchantTokenIdentifier = try container.decodeIfPresent(String.self, forKey: .merchantTokenIdentifier)
            // Apple documents this object's shape for token events, not inside the token: a shape
            // that differs must not refuse a payment Apple signed, so it is then left out.
            merchantTokenMetadata = try? container.decodeIfPresent(MerchantTokenMetadata.self, forKey: .merchantTokenMetadata)
            authenticationResponses = try? container.decodeIfPresent([AuthenticationResponse].self, forKey: .authenticationResponses)
        }
    }

    /// One sub-merchant's part of a multi-token payment, as Apple's token format reference lists it.
    public struct AuthenticationResponse: Sendable, Decodable, Equatable {
        public var merchantIdentifier: String?
        /// The cryptogram for this sub-merchant's amount.
        public var authenticationData: String?
        /// Minor units, written by Apple as a number or a string.
        public var transactionAmount: Int64?

        enum CodingKeys: String, CodingKey { case merchantIdentifier, authenticationData, transactionAmount }

        public init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            merchantIdentifier = try? container.decodeIfPresent(String.self, forKey: .merchantIdentifier)
            authenticationData = try? container.decodeIfPresent(String.self, forKey: .authenticationData)
            transactionAmount =
                (try? container.decodeIfPresent(Int64.self, forKey: .transactionAmount))
                ?? (try? container.decodeIfPresent(String.self, forKey: .transactionAmount)).flatMap { $0.flatMap { Int64($0) } }
        }
    }

    /// Apple's `MerchantTokenMetadata`: what a shop may show of the card behind a merchant token.
    public struct MerchantTokenMetadata: Sendable, Codable, Equatable {
        public struct CardArt: Sendable, Codable, Equatable {
            public var name: String?
            public var type: String?
            public var url: String?

            public init(name: String? = nil, type: String? = nil, url: String? = nil) {
                self.name = name
                self.type = type
                self.url = url
            }
        }

        public struct CardMetadata: Sendable, Codable, Equatable {
            public var cardCountry: String?
            public var expirationDate: String?
            /// The last digits of the card's own number (not the token's).
            public var fpanSuffix: String?
            public var shortDescription: String?
            public var longDescription: String?

            public init(
                cardCountry: String? = nil, expirationDate: String? = nil, fpanSuffix: String? = nil, shortDescription: String? = nil,
                longDescription: String? = nil
            ) {
                self.cardCountry = cardCountry
                self.expirationDate = expirationDate
                self.fpanSuffix = fpanSuffix
                self.shortDescription = shortDescription
                self.longDescription = longDescription
            }
        }

        public var cardArt: [CardArt]?
        public var cardMetadata: CardMetadata?

        public init(cardArt: [CardArt]? = nil, cardMetadata: CardMetadata? = nil) {
            self.cardArt = cardArt
            self.cardMetadata = cardMetadata
        }
    }

    /// `paymentData` of a `3DSecure` payment.
    public struct Credentials: Sendable, Decodable {
        public var onlinePaymentCryptogram: String?
        public var eciIndicator: String?
    }

    /// The plaintext exactly as decrypted (Apple's own field names).
    public let json: [UInt8]
    public let fields: Fields

    /// Reads decrypted plaintext: Apple's common shape through ``PlaintextReader``, anything else
    /// through JSONDecoder. Public so that the fuzzer (scripts/fuzz) can hand it any bytes.
    public init(json: [UInt8]) throws(ApplePayError) {
        do {
            fields = try PlaintextReader.fields(json) ?? JSONDecoder().decode(Fields.self, from: Data(json))
        } catch {
            throw ApplePayError(.invalidPlaintext, "the decrypted payment data is not the JSON Apple documents")
        }
        self.json = json
    }

    /// The last four digits of the device account number.
    public var lastFour: String { String(fields.applicationPrimaryAccountNumber.suffix(4)) }

    /// The expiry as processors want it: Apple's `YYMMDD` → `MMYY`.
    public var expiryMMYY: String? {
        let date = Array(fields.applicationExpirationDate.utf8)
        guard date.count == 6, date.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { return nil }
        return String(decoding: date[2..<4] + date[0..<2], as: UTF8.self)
    }

    public var description: String {
        let token = fields.merchantTokenIdentifier == nil ? "" : ", merchant token"
        return
            "DecryptedPayment(\(fields.paymentDataType), amount \(fields.transactionAmount) in \(fields.currencyCode), account ••••\(lastFour)\(token))"
    }
}
