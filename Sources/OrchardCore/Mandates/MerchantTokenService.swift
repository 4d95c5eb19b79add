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
    /// The token's key for usage information: `POST …/merchantToken/publicKey`. A 202 is
    /// ``MerchantTokenKeyAnswer/notReady``, a 409 ``MerchantTokenKeyAnswer/noNotificationURL``.
    func publicKey(merchantTokenIdentifier: String, for merchant: MerchantConfiguration) async throws(GatewayError)
        -> MerchantTokenKeyAnswer
    /// Tells Apple where the token's notifications go: `POST …/merchantToken/updateMerchantMetadata`.
    func updateMerchantMetadata(merchantTokenIdentifier: String, tokenNotificationURL: String, for merchant: MerchantConfiguration)
        async throws(GatewayError)
    /// Announces the token's usage information: `POST …/merchantToken/notify`.
    func notify(merchantTokenIdentifier: String, metadata: MerchantTokenUsageMetadata, for merchant: MerchantConfiguration)
        async throws(GatewayError)
}

/// Apple's answer to `…/merchantToken/publicKey`.
public enum MerchantTokenKeyAnswer: Sendable, Equatable {
    /// 200: the token's P-384 key (base64 X9.63) and the ciphersuite to seal with.
    case ready(publicKey: String, ciphersuite: String)
    /// 202: the device has not made the key yet; Apple sends `UPDATED_MERCHANT_TOKEN_PUBLIC_KEY` when it has.
    case notReady
    /// 409: Apple has no notification URL for the token; `updateMerchantMetadata` gives it one.
    case noNotificationURL
}

/// `MerchantTokenUsageMetadata`, as `notify` sends it: Apple's field names.
public struct MerchantTokenUsageMetadata: Sendable, Codable, Equatable {
    public var ciphersuite: String
    public var data: String
    public var ephemeralPublicKey: String
    public var infoHash: String
    public var merchantPublicKey: String
    public var merchantTokenPublicKeyHash: String

    public init(_ sealed: UsageInformationSeal.Sealed) {
        ciphersuite = sealed.ciphersuite
        data = sealed.data
        ephemeralPublicKey = sealed.ephemeralPublicKey
        infoHash = sealed.infoHash
        merchantPublicKey = sealed.merchantPublicKey
        merchantTokenPublicKeyHash = sealed.merchantTokenPublicKeyHash
    }
}

/// `GetMerchantTokenUsageInformationPackageResponse`: what the device route answers.
public struct MerchantTokenUsagePackage: Sendable, Codable, Equatable {
    public var ciphersuite: String
    public var data: String
    public var ephemeralPublicKey: String
    public var infoHash: String
    public var merchantPublicKeyHash: String
    public var merchantTokenPublicKeyHash: String

    public init(_ sealed: UsageInformationSeal.Sealed) {
        ciphersuite = sealed.ciphersuite
        data = sealed.data
        ephemeralPublicKey = sealed.ephemeralPublicKey
        infoHash = sealed.infoHash
        merchantPublicKeyHash = sealed.merchantPublicKeyHash
        merchantTokenPublicKeyHash = sealed.merchantTokenPublicKeyHash
    }
}
