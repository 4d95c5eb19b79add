import Crypto
import Foundation
import GooglePay
import _CryptoExtras

/// Mints Google Pay ECv2 tokens as Google's servers make them, with a test root signing key and
/// intermediate key of its own (never Google's): what the stand-in `pay.js` and the tests hand
/// Orchard. The root's `keys.json` is what a test configures in place of Google's.
public struct GooglePayMinter: Sendable {
    public let root: P256.Signing.PrivateKey
    public let intermediate: P256.Signing.PrivateKey
    public var rootExpiration: Date
    public var intermediateExpiration: Date

    public init(
        root: P256.Signing.PrivateKey = .init(), intermediate: P256.Signing.PrivateKey = .init(),
        rootExpiration: Date = Date(timeIntervalSince1970: 4_102_444_800),
        intermediateExpiration: Date = Date().addingTimeInterval(86_400 * 30)
    ) {
        self.root = root
        self.intermediate = intermediate
        self.rootExpiration = rootExpiration
        self.intermediateExpiration = intermediateExpiration
    }

    /// `keys.json` naming the test root, as Google publishes its own.
    public var rootKeysJSON: [UInt8] {
        let object: [String: Any] = [
            "keys": [
                [
                    "keyValue": root.publicKey.derRepresentation.base64EncodedString(), "protocolVersion": "ECv2",
                    "keyExpiration": Self.milliseconds(rootExpiration),
                ]
            ]
        ]
        return Array((try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data())
    }

    /// A token (the JSON string the Google Pay API gives) carrying `payload` encrypted to
    /// `recipient`, signed for `recipientId` (`merchant:<ID>` or `gateway:<gateway>`).
    public func mint(_ payload: [UInt8], recipientId: String, to recipient: P256.KeyAgreement.PublicKey) throws -> [UInt8] {
        let signedKey = try Self.json([
            "keyValue": intermediate.publicKey.derRepresentation.base64EncodedString(),
            "keyExpiration": Self.milliseconds(intermediateExpiration),
        ])
        let keySignature = try root.signature(
            for: ECv2.lengthPrefixed([Array(ECv2.sender.utf8), Array(ECv2.protocolVersion.utf8), Array(signedKey.utf8)]))
        let signedMessage = try Self.json(try seal(payload, to: recipient))
        let messageSignature = try intermediate.signature(
            for: ECv2.lengthPrefixed([
                Array(ECv2.sender.utf8), Array(recipientId.utf8), Array(ECv2.protocolVersion.utf8), Array(signedMessage.utf8),
            ]))
        let token = GooglePayToken(
            protocolVersion: ECv2.protocolVersion, signature: messageSignature.derRepresentation.base64EncodedString(),
            intermediateSigningKey: .init(signedKey: signedKey, signatures: [keySignature.derRepresentation.base64EncodedString()]),
            signedMessage: signedMessage)
        return Array(try JSONEncoder().encode(token))
    }

    /// `{encryptedMessage, ephemeralPublicKey, tag}`: ECDH with a fresh ephemeral key, HKDF-SHA256,
    /// AES-256-CTR with a zero IV, HMAC-SHA256 over the ciphertext.
    func seal(_ payload: [UInt8], to recipient: P256.KeyAgreement.PublicKey) throws -> [String: String] {
        let ephemeral = P256.KeyAgreement.PrivateKey()
        let point = Array(ephemeral.publicKey.x963Representation)
        let shared = try ephemeral.sharedSecretFromKeyAgreement(with: recipient).withUnsafeBytes { Array($0) }
        let keys = HKDF<SHA256>.deriveKey(
            inputKeyMaterial: SymmetricKey(data: point + shared), salt: [UInt8](repeating: 0, count: 32), info: Array(ECv2.sender.utf8),
            outputByteCount: 64
        ).withUnsafeBytes { Array($0) }
        let ciphertext = try AES._CTR.encrypt(
            payload, using: SymmetricKey(data: keys[..<32]), nonce: AES._CTR.Nonce(nonceBytes: [UInt8](repeating: 0, count: 16)))
        let tag = HMAC<SHA256>.authenticationCode(for: ciphertext, using: SymmetricKey(data: keys[32...]))
        return [
            "encryptedMessage": ciphertext.base64EncodedString(), "ephemeralPublicKey": Data(point).base64EncodedString(),
            "tag": Data(tag).base64EncodedString(),
        ]
    }

    /// Google's payment data for a card, expiring at `expiration`.
    public static func paymentData(
        pan: String = "4111111111111111", month: Int = 12, year: Int = 2030, cryptogram: String? = nil, expiration: Date,
        gatewayMerchantId: String? = nil
    ) -> [UInt8] {
        var details: [String: Any] = [
            "authMethod": cryptogram == nil ? "PAN_ONLY" : "CRYPTOGRAM_3DS", "pan": pan, "expirationMonth": month, "expirationYear": year,
        ]
        details["cryptogram"] = cryptogram
        details["eciIndicator"] = cryptogram == nil ? nil : "05"
        var object: [String: Any] = [
            "messageId": "test-" + UUID().uuidString, "messageExpiration": milliseconds(expiration), "paymentMethod": "CARD",
            "paymentMethodDetails": details,
        ]
        object["gatewayMerchantId"] = gatewayMerchantId
        return Array((try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data())
    }

    static func milliseconds(_ date: Date) -> String { String(Int64(date.timeIntervalSince1970 * 1000)) }

    static func json(_ object: [String: String]) throws -> String {
        String(decoding: try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]), as: UTF8.self)
    }
}
