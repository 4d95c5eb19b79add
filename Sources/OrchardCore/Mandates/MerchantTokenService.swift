import ApplePay
import Foundation

/// One event of Apple's Merchant Token Management API, as Apple's gateway describes it when
/// asked for the event named in a notification.
public struct MerchantTokenEvent: Sendable, Codable, Equatable {
    /// Apple's event types; others may come and are kept as they are.
    public static let unlink = "UNLINK"
    public static let updatedMetadata = "UPDATED_METADATA"
    public static let updatedCardArt = "UPDATED_CARD_ART"
    public static let updatedPublicKey = "UPDATED_MERCHANT_TOKEN_PUBLIC_KEY"

    /// The longest event ID or merchant token identifier Apple documents.
    public static let maximumIdentifierLength = 64

    /// Whether `value` can be an event ID or merchant token identifier: 1–64 of `A-Z a-z 0-9 . _ -`.
    /// Both come from an unauthenticated URL or a stored record and go into a path to Apple.
    public static func isValidIdentifier(_ value: String) -> Bool {
        !value.isEmpty && value.utf8.count <= maximumIdentifierLength
            && value.utf8.allSatisfy { byte in
                (0x30...0x39).contains(byte) || (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte)
                    || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "_") || byte == UInt8(ascii: "-")
            }
    }

    public var eventType: String
    public var merchantTokenIdentifier: String
    /// Who originated the event (the user or the card issuer), in Apple's words.
    public var reason: String?
    public var merchantTokenMetadata: DecryptedPayment.MerchantTokenMetadata?
    /// `merchantTokenMetadata.encryptedTokenMetadata`: the MPAN's new expiry and last digits,
    /// encrypted to the merchant's processing key and signed by Apple. Present but in a shape that
    /// cannot be read, it comes with its fields absent, for the lifecycle to refuse by name.
    public var encryptedTokenMetadata: EncryptedTokenMetadata?

    public init(
        eventType: String, merchantTokenIdentifier: String, reason: String? = nil,
        merchantTokenMetadata: DecryptedPayment.MerchantTokenMetadata? = nil, encryptedTokenMetadata: EncryptedTokenMetadata? = nil
    ) {
        self.eventType = eventType
        self.merchantTokenIdentifier = merchantTokenIdentifier
        self.reason = reason
        self.merchantTokenMetadata = merchantTokenMetadata
        self.encryptedTokenMetadata = encryptedTokenMetadata
    }
}

/// Apple's Merchant Token Management API, called over mutual TLS with the merchant's identity
/// (a registered merchant's calls carry the platform integrator's).
public protocol MerchantTokenService: Sendable {
    /// The details of an event Apple notified: `GET /paymentservices/v1/merchantId/{merchantId}/merchantToken/event/{eventId}`.
    /// An event Apple does not know is ``GatewayError/Kind/rejected`` with Apple's status.
    func event(id: String, for merchant: MerchantConfiguration) async throws(GatewayError) -> MerchantTokenEvent
    /// Ends a merchant token at Apple: `POST …/merchantToken/unlink` (204).
    func unlink(merchantTokenIdentifier: String, for merchant: MerchantConfiguration) async throws(GatewayError)
}
