import Crypto
import Foundation

/// HPKE as Apple's merchant token usage information uses it: auth mode, DHKEM(P-384,
/// HKDF-SHA384), HKDF-SHA384, AES-256-GCM. The sender is the merchant's usage key (P-384), the
/// recipient the merchant token's key that Apple hands out (`…/merchantToken/publicKey`), and
/// `info` is `ApplePayMerchantTokenUsageInformation_1.0` followed by the SHA-256 of the token's
/// identifier. Apple states no AAD, so none is used.
///
/// Both things Orchard seals go this way: the `{webServiceURL, authenticationToken}` metadata it
/// announces to Apple (`…/merchantToken/notify`), and the usage information package the device
/// fetches from Orchard.
public enum UsageInformationSeal {
    /// The one ciphersuite Apple names, as it writes it; a device rejects any other.
    public static let ciphersuite = "HPKE_AUTH_P384_SHA384_AES_GCM_256"
    static let infoLabel = "ApplePayMerchantTokenUsageInformation_1.0"

    /// What a seal gives, in Apple's encodings: base64 (standard) for bytes and keys, lowercase
    /// hex for digests.
    public struct Sealed: Sendable, Equatable, Codable {
        public var ciphersuite: String
        /// The ciphertext with its tag.
        public var data: String
        /// HPKE's encapsulated key (the sender's ephemeral P-384 key), X9.63.
        public var ephemeralPublicKey: String
        /// SHA-256 of `info`.
        public var infoHash: String
        /// The merchant's usage key, X9.63.
        public var merchantPublicKey: String
        /// SHA-256 of the merchant's usage key (X9.63 bytes).
        public var merchantPublicKeyHash: String
        /// SHA-256 of the token's key (X9.63 bytes) the data was sealed to.
        public var merchantTokenPublicKeyHash: String
    }

    /// `info` for a merchant token identifier.
    public static func info(merchantTokenIdentifier: String) -> [UInt8] {
        Array(infoLabel.utf8) + Array(SHA256.hash(data: Array(merchantTokenIdentifier.utf8)))
    }

    /// The token's key as Apple answers it (base64 X9.63); nil when it is not a P-384 point.
    public static func tokenKey(base64 text: String) -> P384.KeyAgreement.PublicKey? {
        guard text.utf8.count <= 256, let bytes = Data(base64Encoded: text) else { return nil }
        return try? P384.KeyAgreement.PublicKey(x963Representation: bytes)
    }

    /// Seals `plaintext` for the device holding the token's private key, from `merchantKey`.
    public static func seal(
        _ plaintext: [UInt8], to tokenKey: P384.KeyAgreement.PublicKey, from merchantKey: P384.KeyAgreement.PrivateKey,
        merchantTokenIdentifier: String
    ) throws(ApplePayError) -> Sealed {
        let info = info(merchantTokenIdentifier: merchantTokenIdentifier)
        do {
            var sender = try HPKE.Sender(
                recipientKey: tokenKey, ciphersuite: .P384_SHA384_AES_GCM_256, info: Data(info), authenticatedBy: merchantKey)
            let ciphertext = try sender.seal(plaintext)
            let merchantPublic = merchantKey.publicKey.x963Representation
            let tokenPublic = tokenKey.x963Representation
            return Sealed(
                ciphersuite: ciphersuite, data: ciphertext.base64EncodedString(),
                ephemeralPublicKey: sender.encapsulatedKey.base64EncodedString(), infoHash: hex(SHA256.hash(data: info)),
                merchantPublicKey: merchantPublic.base64EncodedString(), merchantPublicKeyHash: hex(SHA256.hash(data: merchantPublic)),
                merchantTokenPublicKeyHash: hex(SHA256.hash(data: tokenPublic)))
        } catch {
            throw ApplePayError(.keyAgreementFailed, "the usage information cannot be sealed to the merchant token's key (\(error))")
        }
    }

    /// Opens what ``seal(_:to:from:merchantTokenIdentifier:)`` made: the device's side, for
    /// Orchard's own tests and the mock gateway (the tests' second opinion is PyPI's pyhpke).
    public static func open(
        data: String, ephemeralPublicKey: String, with tokenKey: P384.KeyAgreement.PrivateKey,
        from merchantKey: P384.KeyAgreement.PublicKey, merchantTokenIdentifier: String
    ) throws(ApplePayError) -> [UInt8] {
        guard let ciphertext = Data(base64Encoded: data), let encapsulated = Data(base64Encoded: ephemeralPublicKey) else {
            throw ApplePayError(.malformedToken, "the sealed usage information is not base64")
        }
        do {
            var recipient = try HPKE.Recipient(
                privateKey: tokenKey, ciphersuite: .P384_SHA384_AES_GCM_256,
                info: Data(info(merchantTokenIdentifier: merchantTokenIdentifier)), encapsulatedKey: encapsulated,
                authenticatedBy: merchantKey)
            return Array(try recipient.open(ciphertext))
        } catch {
            throw ApplePayError(.decryptionFailed, "the sealed usage information does not open with this key")
        }
    }

    static func hex(_ digest: SHA256.Digest) -> String { Hex.encode(Array(digest)) }
}
