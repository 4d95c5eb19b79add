import Crypto
import Foundation

/// Google's root signing keys, from the `keys.json` Google publishes
/// (`{"keys": [{"keyValue", "protocolVersion", "keyExpiration"}]}`): the ECv2 ones, each with its
/// expiry. ECv1 keys are left out.
public struct GooglePaySigningKeys: Sendable {
    public struct Key: Sendable {
        public var publicKey: P256.Signing.PublicKey
        public var expiration: Date

        public init(publicKey: P256.Signing.PublicKey, expiration: Date) {
            self.publicKey = publicKey
            self.expiration = expiration
        }
    }

    public let keys: [Key]

    public init(keys: [Key]) {
        self.keys = keys
    }

    struct Wire: Decodable {
        struct Entry: Decodable {
            var keyValue: String
            var protocolVersion: String
            var keyExpiration: String?
        }

        var keys: [Entry]
    }

    /// The ECv2 keys of a `keys.json` file.
    public static func parse(_ bytes: [UInt8]) throws(GooglePayError) -> GooglePaySigningKeys {
        guard bytes.count <= 64 * 1024, let wire = try? JSONDecoder().decode(Wire.self, from: Data(bytes)) else {
            throw GooglePayError(
                .invalidSigningKeys,
                "the root signing keys are not Google's keys.json ({\"keys\": [{\"keyValue\", \"protocolVersion\", \"keyExpiration\"}]})")
        }
        var keys: [Key] = []
        for entry in wire.keys where entry.protocolVersion == "ECv2" {
            guard let expiration = entry.keyExpiration.flatMap(ECv2.date(milliseconds:)),
                let key = ECv2.publicKey(base64: entry.keyValue)
            else {
                throw GooglePayError(
                    .invalidSigningKeys, "an ECv2 root signing key lacks a P-256 keyValue or a keyExpiration in milliseconds")
            }
            keys.append(Key(publicKey: key, expiration: expiration))
        }
        guard !keys.isEmpty else { throw GooglePayError(.invalidSigningKeys, "keys.json holds no ECv2 root signing key") }
        return GooglePaySigningKeys(keys: keys)
    }
}

/// ECv2 as Google's "Payment data cryptography" specifies it: an intermediate signing key signed
/// by a root key, a message signed by the intermediate key for one recipient, and (direct mode)
/// ECIES-style encryption to the merchant's key.
public enum ECv2 {
    /// The sender ID Google signs with, and the `info` of its key derivation.
    public static let sender = "Google"
    public static let protocolVersion = "ECv2"

    /// What a verified token gives: the message to decrypt (or to hand a gateway unchanged) and
    /// until when its intermediate key was valid.
    public struct Verified: Sendable, Equatable {
        public var message: GooglePaySignedMessage
        public var intermediateKeyExpiration: Date
    }

    /// Checks, at `now`, that an unexpired root key signed the intermediate key, that the
    /// intermediate key has not expired, and that it signed the message for `recipientId`
    /// (`merchant:<merchant ID>` in direct mode, `gateway:<gateway>` for a gateway).
    public static func verify(_ token: GooglePayToken, recipientId: String, roots: GooglePaySigningKeys, at now: Date)
        throws(GooglePayError) -> Verified
    {
        guard token.protocolVersion == protocolVersion else {
            throw GooglePayError(.unsupportedProtocol, "protocolVersion \(token.protocolVersion.prefix(16)) is not ECv2")
        }
        let signedKey = Array(token.intermediateSigningKey.signedKey.utf8)
        let keyContent = lengthPrefixed([Array(sender.utf8), Array(protocolVersion.utf8), signedKey])
        let liveRoots = roots.keys.filter { $0.expiration > now }.map(\.publicKey)
        let signatures = token.intermediateSigningKey.signatures.prefix(8).compactMap(signature(base64:))
        guard signatures.contains(where: { signature in liveRoots.contains { $0.isValidSignature(signature, for: keyContent) } }) else {
            throw GooglePayError(.untrustedIntermediateKey, "no unexpired Google root signing key signed the intermediate signing key")
        }
        let intermediate = try intermediateKey(signedKey)
        guard intermediate.expiration > now else {
            throw GooglePayError(.intermediateKeyExpired, "the token's intermediate signing key expired at \(intermediate.expiration)")
        }
        let messageContent = lengthPrefixed([
            Array(sender.utf8), Array(recipientId.utf8), Array(protocolVersion.utf8), Array(token.signedMessage.utf8),
        ])
        guard let messageSignature = signature(base64: token.signature),
            intermediate.key.isValidSignature(messageSignature, for: messageContent)
        else {
            throw GooglePayError(.invalidSignature, "the token's signature does not verify for recipient \(recipientId.prefix(128))")
        }
        return Verified(message: try GooglePaySignedMessage.parse(token.signedMessage), intermediateKeyExpiration: intermediate.expiration)
    }

    struct SignedKey: Decodable {
        var keyValue: String
        var keyExpiration: String
    }

    static func intermediateKey(_ signedKey: [UInt8]) throws(GooglePayError) -> (key: P256.Signing.PublicKey, expiration: Date) {
        guard let wire = try? JSONDecoder().decode(SignedKey.self, from: Data(signedKey)), let key = publicKey(base64: wire.keyValue),
            let expiration = date(milliseconds: wire.keyExpiration)
        else { throw GooglePayError(.malformedToken, "signedKey is not {keyValue: a P-256 key, keyExpiration: milliseconds}") }
        return (key, expiration)
    }

    /// Each part preceded by its length as 4 bytes little-endian, as Google signs them.
    public static func lengthPrefixed(_ parts: [[UInt8]]) -> [UInt8] {
        parts.flatMap { part -> [UInt8] in
            let length = UInt32(truncatingIfNeeded: part.count)
            return [UInt8(length & 0xFF), UInt8(length >> 8 & 0xFF), UInt8(length >> 16 & 0xFF), UInt8(length >> 24)] + part
        }
    }

    static func publicKey(base64 text: String) -> P256.Signing.PublicKey? {
        guard text.utf8.count <= 1024, let der = Data(base64Encoded: text) else { return nil }
        return try? P256.Signing.PublicKey(derRepresentation: der)
    }

    static func signature(base64 text: String) -> P256.Signing.ECDSASignature? {
        guard text.utf8.count <= 1024, let der = Data(base64Encoded: text) else { return nil }
        return try? P256.Signing.ECDSASignature(derRepresentation: der)
    }

    /// Milliseconds since 1970, written as a decimal string; nil for anything else or beyond year 9999.
    static func date(milliseconds text: String) -> Date? {
        guard (1...15).contains(text.utf8.count), text.utf8.allSatisfy({ (0x30...0x39).contains($0) }), let value = Int64(text),
            value <= 253_402_300_799_999
        else { return nil }
        return Date(timeIntervalSince1970: Double(value) / 1000)
    }
}
