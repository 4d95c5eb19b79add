import ApplePay
import Crypto
import Foundation

/// Where a refund stands.
public enum RefundState: String, Sendable, Codable, CaseIterable {
    /// With the processor right now.
    case pending
    case refunded
    /// The processor refused it on its first send: nothing was refunded.
    case refused
    /// No definite answer: the same reference is re-sent by a retry with the same Idempotency-Key.
    case unknown
}

/// A refund of a settled payment. Pending, refunded and unknown refunds all count against
/// what is left to refund, so an unknown one can never let the total pass the payment.
public struct RefundRecord: Sendable, Codable, Equatable {
    public var id: String
    public var paymentId: String
    public var amount: Int64
    public var currency: String
    public var state: RefundState
    /// Sent to the processor: `<payment reference>-r<n>`, the same on every re-send.
    public var reference: String
    /// The shop's Idempotency-Key for this refund.
    public var idempotencyKey: String
    public var sends: Int
    public var processorReference: String?
    public var processorCode: String?
    public var processorMessage: String?
    /// The first send.
    public var createdAt: Date
    public var updatedAt: Date
    /// When the reference was last sent; nil in rows written before Orchard kept it (``sentLast``
    /// then reads ``updatedAt``).
    public var lastSentAt: Date?
    /// True for a refund of a payment that was not captured yet: its amount was released (the
    /// authorization voided, or the rest captured), never charged, so nothing was sent back.
    /// Absent for a refund of captured money.
    public var released: Bool?

    public init(
        id: String, paymentId: String, amount: Int64, currency: String, state: RefundState, reference: String, idempotencyKey: String,
        sends: Int = 1, processorReference: String? = nil, processorCode: String? = nil, processorMessage: String? = nil,
        createdAt: Date, updatedAt: Date? = nil, lastSentAt: Date? = nil
    ) {
        self.lastSentAt = lastSentAt
        self.id = id
        self.paymentId = paymentId
        self.amount = amount
        self.currency = currency
        self.state = state
        self.reference = reference
        self.idempotencyKey = idempotencyKey
        self.sends = sends
        self.processorReference = processorReference
        self.processorCode = processorCode
        self.processorMessage = processorMessage
        self.createdAt = createdAt
        self.updatedAt = updatedAt ?? createdAt
    }

    /// Whether it counts against the payment's refundable (captured) amount: a released amount
    /// was never captured, so it does not.
    public var holdsAmount: Bool { state != .refused && released != true }

    /// The reference's last send, or for a row from before Orchard kept it, its last change.
    public var sentLast: Date { lastSentAt ?? updatedAt }
}

extension RefundRecord {
    /// What a repeated Idempotency-Key gets, as every store decides it: nil when this refund
    /// comes back as it is, or the refund re-sent under its reference (pending, one more send,
    /// sent last at the draft's time) when its outcome is unknown; the store writes that change.
    /// `draft.sends` is how often the engine saw it sent when it decided to re-send it (after
    /// asking the processor): another count means someone re-sent it meanwhile. Throws when the
    /// key named another amount, or while (or since) a call for it is with the processor.
    public func repeated(like draft: RefundRecord) throws(CoreError) -> RefundRecord? {
        guard amount == draft.amount else {
            throw CoreError(.idempotencyMismatch, "this Idempotency-Key was used for a refund of \(amount)")
        }
        switch state {
        case .pending:
            throw CoreError(.paymentInProgress, "this refund is with the processor right now; ask again shortly")
        case .refunded, .refused:
            return nil
        case .unknown:
            guard draft.sends == sends else {
                throw CoreError(.paymentInProgress, "this refund was sent again meanwhile; ask again shortly")
            }
            var resent = self
            resent.state = .pending
            resent.sends += 1
            resent.updatedAt = draft.createdAt
            resent.lastSentAt = draft.createdAt
            return resent
        }
    }
}
