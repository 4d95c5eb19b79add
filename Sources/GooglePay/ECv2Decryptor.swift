import Crypto
import Foundation
import _CryptoExtras

/// What a direct-mode merchant's ECv2 message opens to: Google's payment data. The card number
/// and cryptogram never appear in its description.
public struct GooglePayPaymentData: Sendable, Equatable, CustomStringConvertible {
    public enum AuthMethod: String, Sendable, Codable {
        /// The card as stored in the Google account: a PAN, without a cryptogram (3-D Secure advised).
        case panOnly = "PAN_ONLY"
        /// A device token with a cryptogram.
        case cryptogram3DS = "CRYPTOGRAM_3DS"
    }

    public struct Card: Sendable, Equatable, Codable {
        public var authMethod: AuthMethod
        public var pan: String
        public var expirationMonth: Int
        public var expirationYear: Int
        public var cryptogram: String?
        public var eciIndicator: String?
        public var assuranceDetails: AssuranceDetails?

        public struct AssuranceDetails: Sendable, Equatable, Codable {
            public var accountVerified: Bool?
            public var cardHolderAuthenticated: Bool?
        }
    }

    public var messageId: String
    public var messageExpiration: Date
    /// `CARD`: the only kind Google documents for ECv2.
    public var paymentMethod: String
    public var card: Card
    public var gatewayMerchantId: String?

    public var description: String {
        "GooglePayPaymentData(\(card.authMethod.rawValue), card ending \(card.pan.suffix(4)), expires \(card.expirationMonth)/\(card.expirationYear))"
    }
}

extension ECv2 {
    /// Opens a verified message with the merchant's private key, at `now`: ECDH with the sender's
    /// ephemeral key, HKDF-SHA256 (zero salt, info `Google`) to a 256-bit AES key and a 256-bit
    /// HMAC key, the tag checked in constant time before anything is decrypted, AES-256-CTR with a
    /// zero IV, then Google's payment data, refused once its `messageExpiration` has passed.
    public static func decrypt(_ verified: Verified, with key: P256.KeyAgreement.PrivateKey, at now: Date)
        throws(GooglePayError) -> GooglePayPaymentData
    {
        let message = verified.message
        let plaintext: [UInt8]
        do {
            let ephemeral = try P256.KeyAgreement.PublicKey(x963Representation: message.ephemeralPublicKey)
            let shared = try key.sharedSecretFromKeyAgreement(with: ephemeral).withUnsafeBytes { Array($0) }
            let keys = HKDF<SHA256>.deriveKey(
                inputKeyMaterial: SymmetricKey(data: message.ephemeralPublicKey + shared), salt: [UInt8](repeating: 0, count: 32),
                info: Array(sender.utf8), outputByteCount: 64
            ).withUnsafeBytes { Array($0) }
            let macKey = SymmetricKey(data: keys[32...])
            // HMAC's own comparison runs in constant time.
            guard HMAC<SHA256>.isValidAuthenticationCode(message.tag, authenticating: message.encryptedMessage, using: macKey) else {
                throw GooglePayError(.tagMismatch, "the message's tag does not match: it is not for this key, or it was altered")
            }
            plaintext = Array(
                try AES._CTR.decrypt(
                    message.encryptedMessage, using: SymmetricKey(data: keys[..<32]),
                    nonce: AES._CTR.Nonce(nonceBytes: [UInt8](repeating: 0, count: 16))))
        } catch let error as GooglePayError {
            throw error
        } catch {
            throw GooglePayError(.tagMismatch, "the message does not open with this key (\(type(of: error)))")
        }
        let data = try paymentData(plaintext)
        guard data.messageExpiration > now else {
            throw GooglePayError(.messageExpired, "the token's message expired at \(data.messageExpiration)")
        }
        return data
    }

    struct WireData: Decodable {
        var messageId: String
        var messageExpiration: String
        var paymentMethod: String
        var paymentMethodDetails: GooglePayPaymentData.Card
        var gatewayMerchantId: String?
    }

    /// A decrypted message's bytes as Google's payment data: a `CARD` with a 12–19 digit number,
    /// an expiry and, for `CRYPTOGRAM_3DS`, a cryptogram. Public for the fuzzer.
    public static func paymentData(_ plaintext: [UInt8]) throws(GooglePayError) -> GooglePayPaymentData {
        guard let wire = try? JSONDecoder().decode(WireData.self, from: Data(plaintext)),
            let expiration = date(milliseconds: wire.messageExpiration)
        else { throw GooglePayError(.invalidPlaintext, "the decrypted message is not Google's payment data") }
        let card = wire.paymentMethodDetails
        guard wire.paymentMethod == "CARD", (12...19).contains(card.pan.count), card.pan.allSatisfy(\.isASCII),
            card.pan.allSatisfy(\.isNumber), (1...12).contains(card.expirationMonth), (2000...9999).contains(card.expirationYear),
            card.authMethod == .panOnly || card.cryptogram?.isEmpty == false
        else {
            throw GooglePayError(
                .invalidPlaintext,
                "the decrypted message's card is not a CARD with a 12–19 digit number, an expiry, and a cryptogram for CRYPTOGRAM_3DS")
        }
        return GooglePayPaymentData(
            messageId: wire.messageId, messageExpiration: expiration, paymentMethod: wire.paymentMethod, card: card,
            gatewayMerchantId: wire.gatewayMerchantId)
    }
}
