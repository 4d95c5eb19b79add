import ApplePay
import Crypto
import Foundation

/// What a shop's backend asks for when it creates a payment request (`POST /v1/payment-requests`).
/// Re-encoded with sorted keys, it is the idempotency fingerprint, so its fields are the request's.
public struct PaymentRequestDraft: Codable, Sendable, Equatable {
    public struct ShippingMethod: Codable, Sendable, Equatable {
        public var identifier: String
        public var label: String
        public var detail: String?
        public var amount: Int64
        public var countries: [String]?

        public init(identifier: String, label: String, detail: String?, amount: Int64, countries: [String]?) {
            self.identifier = identifier
            self.label = label
            self.detail = detail
            self.amount = amount
            self.countries = countries
        }
    }

    public struct Line: Codable, Sendable, Equatable {
        public var label: String
        public var amount: Int64

        public init(label: String, amount: Int64) {
            self.label = label
            self.amount = amount
        }
    }

    /// Apple Pay JS's `ApplePayPaymentTokenContext`, loosely: any shape is refused the same way.
    public struct TokenContext: Codable, Sendable, Equatable {
        public var merchantIdentifier: String?

        public init(merchantIdentifier: String?) { self.merchantIdentifier = merchantIdentifier }
    }

    public var amount: Int64
    public var currency: String
    public var countryCode: String?
    public var reference: String
    public var lineItems: [Line]?
    public var shippingMethods: [ShippingMethod]?
    public var requiredShippingContactFields: [String]?
    public var requiredBillingContactFields: [String]?
    public var supportedNetworks: [String]?
    public var metadata: [String: String]?
    public var expiresInSeconds: Int?
    /// The total's label on the sheet (1–100 characters): the event or shop the shopper pays;
    /// absent: the merchant's `displayName`.
    public var totalLabel: String?
    /// `automatic`: Orchard captures the payment once authorized; absent or `manual`: the shop
    /// calls `/capture` (or `/cancel`). Any other value is refused when the body is decoded.
    public var capture: CaptureMode?
    /// A recurring, deferred or automatic-reload agreement: the payment then sets up a mandate.
    public var agreement: PaymentAgreement?
    /// Read only to refuse it: decoding ignores unknown keys, and a split payment silently
    /// charged as one would be worse than a clear 400.
    public var multiTokenContexts: [TokenContext]?

    public init(amount: Int64, currency: String, countryCode: String? = nil, reference: String) {
        self.amount = amount
        self.currency = currency
        self.countryCode = countryCode
        self.reference = reference
    }

    /// SHA-256 of the draft encoded with sorted keys: a repeated Idempotency-Key must bring the same.
    public func fingerprint() throws -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        return Array(SHA256.hash(data: try encoder.encode(self)))
    }
}

/// The rules for what a shop sends with its calls, shared by payment requests, refunds and mandates.
public enum ShopInput {
    /// The shop's reference (1–128 characters) and metadata (at most 20 keys of 1–40 characters,
    /// values of at most 500), checked; `naming` says what the reference is in the message.
    public static func checkedReference(_ reference: String, metadata: [String: String]?, naming: String) throws(CoreError) -> (
        String, [String: String]
    ) {
        guard (1...128).contains(reference.count) else {
            throw CoreError(.invalidRequest, "reference (\(naming)) must be 1–128 characters")
        }
        let metadata = metadata ?? [:]
        guard metadata.count <= 20, metadata.allSatisfy({ (1...40).contains($0.key.count) && $0.value.count <= 500 }) else {
            throw CoreError(.invalidRequest, "metadata takes at most 20 keys of 1–40 characters, values of at most 500")
        }
        return (reference, metadata)
    }

    /// An `Idempotency-Key` as sent (nil: none was): required, 1–255 visible ASCII characters.
    public static func idempotencyKey(_ key: String?) throws(CoreError) -> String {
        guard let key else {
            throw CoreError(
                .invalidRequest, "send an Idempotency-Key header (a UUID per new request) so a retry cannot create a second one")
        }
        guard (1...255).contains(key.utf8.count), key.utf8.allSatisfy({ (0x21...0x7E).contains($0) }) else {
            throw CoreError(.invalidRequest, "Idempotency-Key must be 1–255 visible ASCII characters")
        }
        return key
    }
}
