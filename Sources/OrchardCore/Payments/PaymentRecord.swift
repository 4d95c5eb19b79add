import ApplePay
import Foundation

/// Where a payment stands. ``PaymentLifecycle`` lists the moves between these states.
public enum PaymentState: String, Sendable, Codable, CaseIterable {
    /// Being sent to the processor under its reference right now.
    case pending
    case authorized
    /// The issuer or processor declined: nothing was charged.
    case refused
    /// The processor refused the request itself (credentials, validation) on its first send: nothing was charged.
    case failed
    /// No definite answer (5xx, 409 in progress, timeout, dropped connection, unreadable body): the
    /// reference is re-sent until the processor's answer for it arrives, or an operator resolves it.
    case unknown
    /// Written by Orchard before 0.4 (an unknown attempt answered by a later row); no longer produced.
    case superseded
    case settled
    case cancelled
}

/// A payment as stored. Never the device account number, cryptogram or expiry.
public struct PaymentRecord: Sendable, Codable, Equatable {
    public var id: String
    public var orderId: String
    /// The token's header.transactionId (hex); unique: a replay loses.
    public var transactionId: String
    public var state: PaymentState
    public var amount: Int64
    /// ISO 4217 alphabetic code.
    public var currency: String
    public var network: String?
    public var lastFour: String
    /// `record`, `worldpay` or `worldline`.
    public var processor: String
    /// The idempotency reference sent to the processor; reused by a retry after an unknown outcome.
    public var reference: String
    /// The processor's own ID for the payment.
    public var processorReference: String?
    /// The processor's refusal or error code and description.
    public var processorCode: String?
    public var processorMessage: String?
    /// Follow-up actions the processor offered (`settle`, `cancel` at authorization; `refund`,
    /// `partialRefund` once settled, for processors that hand them out) and their URLs.
    public var links: [String: String]
    /// How often the reference was sent: by the shopper's first tap, their retries and the reconciler.
    public var sends: Int = 1
    /// Background re-sends so far, and when the next one is due (while unknown).
    public var reconcileAttempts: Int = 0
    public var nextReconcileAt: Date?
    /// The mandate this payment set up (its first payment) or charged (a merchant-initiated charge).
    public var mandateId: String?
    /// Apple's merchant token identifier and the card details it came with, when the token was
    /// a merchant token; never the MPAN itself.
    public var merchantTokenIdentifier: String?
    public var merchantTokenMetadata: DecryptedPayment.MerchantTokenMetadata?
    /// The first send: when the reference was first sent.
    public var createdAt: Date
    public var updatedAt: Date
    /// When the reference was last sent (first send, retry or re-send): a processor's "not
    /// found" counts only once its records' lag has passed since then. Nil in rows written
    /// before Orchard kept it; ``sentLast`` then reads ``updatedAt``.
    public var lastSentAt: Date?
    /// While an automatic capture of this authorized payment is owed: when it is next tried
    /// (``AutomaticCapture``). Set in the move that authorizes it, cleared by every move out of
    /// `authorized` and when Orchard gives up; nil otherwise.
    public var captureDueAt: Date?
    /// The automatic captures of this payment the processor refused so far.
    public var captureAttempts: Int = 0
    /// What its capture took, in minor units (1 to ``amount``; the rest of the authorization was
    /// released): set by the move to `settled`. Nil before, and for a payment settled before
    /// Orchard kept it, which captured the whole amount (``captured``).
    public var amountCaptured: Int64?

    public init(
        id: String, orderId: String, transactionId: String, state: PaymentState, amount: Int64, currency: String, network: String?,
        lastFour: String, processor: String, reference: String, processorReference: String? = nil, processorCode: String? = nil,
        processorMessage: String? = nil, links: [String: String] = [:], sends: Int = 1, reconcileAttempts: Int = 0,
        nextReconcileAt: Date? = nil, mandateId: String? = nil, merchantTokenIdentifier: String? = nil,
        merchantTokenMetadata: DecryptedPayment.MerchantTokenMetadata? = nil, createdAt: Date, updatedAt: Date? = nil,
        lastSentAt: Date? = nil
    ) {
        self.lastSentAt = lastSentAt
        self.mandateId = mandateId
        self.merchantTokenIdentifier = merchantTokenIdentifier
        self.merchantTokenMetadata = merchantTokenMetadata
        self.id = id
        self.orderId = orderId
        self.transactionId = transactionId
        self.state = state
        self.amount = amount
        self.currency = currency
        self.network = network
        self.lastFour = lastFour
        self.processor = processor
        self.reference = reference
        self.processorReference = processorReference
        self.processorCode = processorCode
        self.processorMessage = processorMessage
        self.links = links
        self.sends = sends
        self.reconcileAttempts = reconcileAttempts
        self.nextReconcileAt = nextReconcileAt
        self.createdAt = createdAt
        self.updatedAt = updatedAt ?? createdAt
    }
}

extension PaymentRecord {
    /// The reference's last send; for a row from before Orchard kept it, its last change, which
    /// is never earlier than its last send.
    public var sentLast: Date { lastSentAt ?? updatedAt }

    /// What was captured: ``amountCaptured``, or the whole amount for a payment settled before
    /// Orchard kept it; nil while nothing is (not settled). What refunds are bounded by.
    public var captured: Int64? { amountCaptured ?? (state == .settled ? amount : nil) }
}
