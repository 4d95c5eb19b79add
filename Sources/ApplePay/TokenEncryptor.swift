import Crypto
import Foundation
import SwiftASN1
import X509
import _CryptoExtras

/// Encrypts a payload to a processing key's public key the way Apple encrypts a token (EC_v1 or
/// RSA_v1), without Apple's signature: what `orchard doctor` decrypts to prove a configured key
/// and certificate will decrypt Apple's tokens, and what the test minter then signs. The key
/// derivation is ``TokenDecryptor``'s own, so the two cannot drift apart.
public enum TokenEncryptor {
    /// A token's decoded fields for `payload`, encrypted to `recipient` (a processing
    /// certificate's key, EC P-256 or RSA) for the merchant whose ID hashes to `merchantIdentifierHash`.
    public static func encrypt(_ payload: [UInt8], to recipient: Certificate.PublicKey, merchantIdentifierHash: [UInt8])
        throws(ApplePayError) -> PaymentData.Decoded
    {
        guard let spki = try? recipient.serializeAsPEM().derBytes else {
            throw ApplePayError(.invalidCertificate, "the processing certificate's key cannot be read")
        }
        if let ec = try? P256.KeyAgreement.PublicKey(derRepresentation: spki) {
            let sealed = try ecV1(payload, to: ec, merchantIdentifierHash: merchantIdentifierHash, ephemeral: .init())
            return decoded(.ecV1, keyMaterial: sealed.keyMaterial, data: sealed.data, publicKeyHash: ec.derRepresentation)
        }
        if let rsa = try? _RSA.Encryption.PublicKey(derRepresentation: spki) {
            let sealed = try rsaV1(payload, to: rsa)
            return decoded(.rsaV1, keyMaterial: sealed.keyMaterial, data: sealed.data, publicKeyHash: rsa.derRepresentation)
        }
        throw ApplePayError(.invalidCertificate, "the processing certificate's key is neither EC P-256 nor RSA")
    }

    /// A merchant token's `TokenMetadata` JSON encrypted to `recipient` as Apple encrypts a token
    /// event's `encryptedTokenMetadata` (as a payment token's data), unsigned: the test minter signs
    /// it over key material ‖ data.
    public static func encryptTokenMetadata(_ payload: [UInt8], to recipient: Certificate.PublicKey, merchantIdentifierHash: [UInt8])
        throws(ApplePayError) -> EncryptedTokenMetadata
    {
        let sealed = try encrypt(payload, to: recipient, merchantIdentifierHash: merchantIdentifierHash)
        let keyMaterial = Data(sealed.keyMaterial).base64EncodedString()
        return EncryptedTokenMetadata(
            data: Data(sealed.data).base64EncodedString(), ephemeralPublicKey: sealed.scheme == .ecV1 ? keyMaterial : nil,
            wrappedKey: sealed.scheme == .rsaV1 ? keyMaterial : nil, publicKeyHash: Data(sealed.publicKeyHash).base64EncodedString(),
            signature: nil)
    }

    /// EC_v1: ECDH with `ephemeral`, the single-step KDF, AES-256-GCM with a zero nonce.
    public static func ecV1(
        _ payload: [UInt8], to recipient: P256.KeyAgreement.PublicKey, merchantIdentifierHash: [UInt8],
        ephemeral: P256.KeyAgreement.PrivateKey
    ) throws(ApplePayError) -> (keyMaterial: [UInt8], data: [UInt8]) {
        let secret: [UInt8]
        do {
            secret = try ephemeral.sharedSecretFromKeyAgreement(with: recipient).withUnsafeBytes { Array($0) }
        } catch {
            throw ApplePayError(.keyAgreementFailed, "no shared secret with the processing key")
        }
        let key = SymmetricKey(data: TokenDecryptor.deriveKey(sharedSecret: secret, partyV: merchantIdentifierHash))
        return (Array(ephemeral.publicKey.derRepresentation), try seal(payload, key: key))
    }

    /// RSA_v1: a random AES-128 key wrapped with RSA-OAEP-SHA256.
    public static func rsaV1(_ payload: [UInt8], to recipient: _RSA.Encryption.PublicKey) throws(ApplePayError) -> (
        keyMaterial: [UInt8], data: [UInt8]
    ) {
        let key = SymmetricKey(size: .bits128)
        let wrapped: [UInt8]
        do {
            wrapped = try key.withUnsafeBytes { Array(try recipient.encrypt(Array($0), padding: .PKCS1_OAEP_SHA256)) }
        } catch {
            throw ApplePayError(.keyAgreementFailed, "the RSA processing key cannot wrap a key")
        }
        return (wrapped, try seal(payload, key: key))
    }

    /// AES-GCM with the zero 16-byte nonce Apple uses (each key encrypts one payload), tag appended.
    static func seal(_ payload: [UInt8], key: SymmetricKey) throws(ApplePayError) -> [UInt8] {
        do {
            let box = try AES.GCM.seal(payload, using: key, nonce: AES.GCM.Nonce(data: [UInt8](repeating: 0, count: 16)))
            return Array(box.ciphertext) + Array(box.tag)
        } catch {
            throw ApplePayError(.decryptionFailed, "the payload cannot be encrypted")
        }
    }

    static func decoded(_ scheme: PaymentData.Scheme, keyMaterial: [UInt8], data: [UInt8], publicKeyHash spki: Data)
        -> PaymentData.Decoded
    {
        PaymentData.Decoded(
            scheme: scheme, data: data, signature: [], keyMaterial: keyMaterial, publicKeyHash: Array(SHA256.hash(data: spki)),
            transactionId: (0..<32).map { _ in UInt8.random(in: 0...255) }, applicationData: nil)
    }
}

extension ProcessingKey {
    /// The public half: its processing certificate's key when it has one (what Apple encrypts
    /// to), else the private key's own.
    public var publicKey: Certificate.PublicKey? {
        certificate?.publicKey ?? (try? Certificate.PublicKey(derEncoded: publicKeyInfo))
    }
}
