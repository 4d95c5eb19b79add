import Foundation

/// Why a Google Pay token was refused: a stable code and a message an operator can act on. The
/// token's contents (card number, cryptogram) are never in it.
public struct GooglePayError: Error, Equatable, Sendable, CustomStringConvertible {
    public enum Code: String, Sendable, CaseIterable {
        /// Not a token: not JSON, a field missing or of the wrong type, bytes that are not base64.
        case malformedToken
        /// A `protocolVersion` other than `ECv2`.
        case unsupportedProtocol
        /// No Google root signing key (ECv2, unexpired) signed the intermediate key.
        case untrustedIntermediateKey
        /// The intermediate signing key's `keyExpiration` has passed.
        case intermediateKeyExpired
        /// The message's signature does not verify with the intermediate key for this recipient.
        case invalidSignature
        /// The tag over the encrypted message does not match: not for this key, or altered.
        case tagMismatch
        /// The plaintext is not Google's payment data.
        case invalidPlaintext
        /// The decrypted message's `messageExpiration` has passed.
        case messageExpired
        /// The root signing keys given are not Google's `keys.json` format, or none is usable.
        case invalidSigningKeys
    }

    public var code: Code
    public var message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "\(code.rawValue): \(message)" }
}

/// Google's `PaymentMethodToken` (ECv2), as the Google Pay API gives it in
/// `paymentMethodData.tokenizationData.token`: a JSON string holding this object. Its signed parts
/// (`signedKey`, `signedMessage`) stay the exact strings Google sent, since the signatures are
/// over those bytes.
public struct GooglePayToken: Sendable, Codable, Equatable {
    public struct IntermediateSigningKey: Sendable, Codable, Equatable {
        /// JSON `{"keyValue": base64 X.509 SubjectPublicKeyInfo (EC P-256), "keyExpiration": milliseconds}`.
        public var signedKey: String
        /// Base64 DER ECDSA signatures of the signed key by Google's root signing keys.
        public var signatures: [String]

        public init(signedKey: String, signatures: [String]) {
            self.signedKey = signedKey
            self.signatures = signatures
        }
    }

    public var protocolVersion: String
    /// Base64 DER ECDSA signature of the message by the intermediate key.
    public var signature: String
    public var intermediateSigningKey: IntermediateSigningKey
    /// JSON `{"encryptedMessage", "ephemeralPublicKey", "tag"}`, each base64.
    public var signedMessage: String

    public init(protocolVersion: String, signature: String, intermediateSigningKey: IntermediateSigningKey, signedMessage: String) {
        self.protocolVersion = protocolVersion
        self.signature = signature
        self.intermediateSigningKey = intermediateSigningKey
        self.signedMessage = signedMessage
    }

    /// The largest token read: Google's are a few kilobytes.
    public static let maximumBytes = 16 * 1024

    /// A token from the JSON string the Google Pay API gives.
    public static func parse(_ bytes: [UInt8]) throws(GooglePayError) -> GooglePayToken {
        guard bytes.count <= maximumBytes, let token = try? JSONDecoder().decode(GooglePayToken.self, from: Data(bytes)) else {
            throw GooglePayError(
                .malformedToken,
                "the Google Pay token is not a PaymentMethodToken (JSON with protocolVersion, signature, intermediateSigningKey and signedMessage)"
            )
        }
        guard token.protocolVersion == "ECv2" else {
            throw GooglePayError(
                .unsupportedProtocol, "protocolVersion \(token.protocolVersion.prefix(16)) is not ECv2, the one Orchard reads")
        }
        return token
    }
}

/// The `signedMessage`'s fields, read once its signature verified.
public struct GooglePaySignedMessage: Sendable, Equatable {
    public var encryptedMessage: [UInt8]
    /// The sender's ephemeral P-256 key, an uncompressed point.
    public var ephemeralPublicKey: [UInt8]
    public var tag: [UInt8]

    struct Wire: Decodable {
        var encryptedMessage: String
        var ephemeralPublicKey: String
        var tag: String
    }

    static func parse(_ text: String) throws(GooglePayError) -> GooglePaySignedMessage {
        guard let wire = try? JSONDecoder().decode(Wire.self, from: Data(text.utf8)),
            let encrypted = Data(base64Encoded: wire.encryptedMessage), let ephemeral = Data(base64Encoded: wire.ephemeralPublicKey),
            let tag = Data(base64Encoded: wire.tag)
        else { throw GooglePayError(.malformedToken, "signedMessage is not {encryptedMessage, ephemeralPublicKey, tag} in base64") }
        return GooglePaySignedMessage(encryptedMessage: Array(encrypted), ephemeralPublicKey: Array(ephemeral), tag: Array(tag))
    }
}
