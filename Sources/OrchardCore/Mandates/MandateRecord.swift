import ApplePay
import Foundation

/// A shopper's standing permission, from a recurring, deferred or automatic-reload payment, to
/// be charged later without them: the processor's reference for the stored credential, never
/// card data. Apple's merchant token identifier ties it to Apple's token events.
public struct MandateRecord: Sendable, Codable, Equatable {
    public enum State: String, Sendable, Codable, CaseIterable {
        /// Later charges may be made.
        case active
        /// Ended by the shop, by Apple (the shopper or issuer unlinked the token) or an operator: closed for good.
        case ended
    }

    /// `mdt_` and 32 hex digits.
    public var id: String
    public var merchantIdentifier: String
    /// The agreement's kind: a `recurring` mandate is charged as a scheduled series, the others as unscheduled.
    public var kind: PaymentAgreement.Kind
    /// The payment (and its order) that set the mandate up.
    public var paymentId: String
    public var orderId: String
    /// `worldpay`, `worldline` or `record`: later charges go to the same processor.
    public var processor: String
    /// What the processor stored: its token for the credential and, where the scheme gave one,
    /// the scheme's reference of the first payment.
    public var credential: StoredCredential
    /// Apple's merchant token identifier (the token's network ID, not the MPAN); nil when the
    /// issuer gave a device token instead.
    public var merchantTokenIdentifier: String?
    public var merchantTokenMetadata: DecryptedPayment.MerchantTokenMetadata?
    /// The MPAN's expiry and last digits from Apple's last verified token event; nil until one came.
    public var merchantToken: MerchantTokenDetails?
    /// ISO 4217 alphabetic code: every later charge is in it.
    public var currency: String
    /// The card's network and last four digits, as the first payment had them.
    public var network: String?
    public var lastFour: String
    public var description: String
    public var state: State
    /// Why it ended: `shop`, `apple:<reason>` or `operator`.
    public var endedReason: String?
    public var createdAt: Date
    public var updatedAt: Date
    public var endedAt: Date?

    public init(
        id: String, merchantIdentifier: String, kind: PaymentAgreement.Kind, paymentId: String, orderId: String, processor: String,
        credential: StoredCredential, merchantTokenIdentifier: String?, merchantTokenMetadata: DecryptedPayment.MerchantTokenMetadata?,
        merchantToken: MerchantTokenDetails? = nil, currency: String, network: String?, lastFour: String, description: String,
        state: State = .active, endedReason: String? = nil,
        createdAt: Date, updatedAt: Date? = nil, endedAt: Date? = nil
    ) {
        self.id = id
        self.merchantIdentifier = merchantIdentifier
        self.kind = kind
        self.paymentId = paymentId
        self.orderId = orderId
        self.processor = processor
        self.credential = credential
        self.merchantTokenIdentifier = merchantTokenIdentifier
        self.merchantTokenMetadata = merchantTokenMetadata
        self.merchantToken = merchantToken
        self.currency = currency
        self.network = network
        self.lastFour = lastFour
        self.description = description
        self.state = state
        self.endedReason = endedReason
        self.createdAt = createdAt
        self.updatedAt = updatedAt ?? createdAt
        self.endedAt = endedAt
    }

    /// A new mandate identifier.
    public static func newIdentifier() -> String { "mdt_" + RecordIdentifier.random() }
}

/// What a processor keeps for later merchant-initiated charges.
public struct StoredCredential: Sendable, Codable, Equatable {
    /// The processor's token for the credential (Worldline's token ID, Worldpay's token href).
    public var reference: String
    /// The card scheme's reference of the first, shopper-present payment, which later charges
    /// quote (Worldpay's `schemeReference`); nil when the processor keeps it with the token.
    public var schemeReference: String?

    public init(reference: String, schemeReference: String? = nil) {
        self.reference = reference
        self.schemeReference = schemeReference
    }
}

/// How a mandate's credential will be used, as the first payment tells the processor.
public enum CredentialUsage: String, Sendable, Codable, Equatable {
    /// A series at fixed intervals (a subscription): recurring agreements.
    case scheduled
    /// Charges at times the merchant cannot fix in advance: deferred and automatic-reload agreements.
    case unscheduled

    public init(_ kind: PaymentAgreement.Kind) {
        self = kind == .recurring ? .scheduled : .unscheduled
    }
}
