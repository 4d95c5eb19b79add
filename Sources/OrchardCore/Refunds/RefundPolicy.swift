import Foundation

/// What a store reads, under the payment's lock, for ``RefundPolicy/decide(_:_:)``.
public struct RefundClaimSnapshot: Sendable, Equatable {
    /// The refunded payment's state, amount, what its capture took and reference.
    public struct Payment: Sendable, Equatable {
        public var state: PaymentState
        public var amount: Int64
        public var reference: String
        /// ``PaymentRecord/amountCaptured``: nil for a payment captured whole before Orchard kept it.
        public var amountCaptured: Int64?

        public init(state: PaymentState, amount: Int64, reference: String, amountCaptured: Int64? = nil) {
            self.state = state
            self.amount = amount
            self.reference = reference
            self.amountCaptured = amountCaptured
        }
    }

    /// Nil: there is no such payment.
    public var payment: Payment?
    /// The payment's refund under the draft's Idempotency-Key, if there is one.
    public var earlier: RefundRecord?
    /// What the payment's pending, refunded and unknown refunds hold together.
    public var held: Int64
    /// How many refunds the payment has, in any state.
    public var count: Int

    public init(payment: Payment?, earlier: RefundRecord?, held: Int64, count: Int) {
        self.payment = payment
        self.earlier = earlier
        self.held = held
        self.count = count
    }
}

/// What a store writes for a refund claim ``RefundPolicy`` allowed.
public enum RefundClaimDecision: Sendable, Equatable {
    /// Nothing: the key's refund comes back as it is.
    case existing(RefundRecord)
    /// The key's unknown refund goes back to pending with one more send, if it is still unknown.
    case resend(RefundRecord)
    /// Insert this new pending refund.
    case new(RefundRecord)

    /// The refund the caller gets back.
    public var refund: RefundRecord {
        switch self {
        case .existing(let refund), .resend(let refund), .new(let refund): refund
        }
    }
}

/// Whether a payment may be refunded, by how much, under which reference: the one place that
/// decides it, for every store.
public enum RefundPolicy {
    /// The reference of a payment's `number`-th refund (1-based): the processor's idempotency key.
    public static func reference(paymentReference: String, number: Int) -> String {
        "\(paymentReference)-r\(number)"
    }

    /// What is left to refund of `amount` once `held` is held (never negative; no arithmetic that traps).
    public static func left(of amount: Int64, held: Int64) -> Int64 {
        let (left, overflow) = amount.subtractingReportingOverflow(held)
        return overflow || left < 0 ? 0 : left
    }

    /// Decides a refund claim from what the store read under the payment's lock; throws the
    /// refusal the engine reports, and then the store writes nothing. A repeated key comes back
    /// as ``RefundRecord/repeated(like:)`` says, before anything about the payment is checked.
    public static func decide(_ draft: RefundRecord, _ snapshot: RefundClaimSnapshot) throws(CoreError) -> RefundClaimDecision {
        if let earlier = snapshot.earlier {
            return try earlier.repeated(like: draft).map(RefundClaimDecision.resend) ?? .existing(earlier)
        }
        guard let payment = snapshot.payment else {
            throw CoreError(.invalidState, "there is no payment \(draft.paymentId)")
        }
        guard payment.state == .settled else {
            throw CoreError(
                .invalidState,
                "only a settled (captured) payment can be refunded; this one is \(payment.state.rawValue)"
                    + (payment.state == .authorized ? ": cancel it instead" : ""))
        }
        // Bounded by what was captured: the rest of a partly captured authorization was never charged.
        let left = left(of: payment.amountCaptured ?? payment.amount, held: snapshot.held)
        guard draft.amount <= left else {
            throw CoreError(.refundTooLarge, "the refund of \(draft.amount) is more than the \(left) left to refund")
        }
        var refund = draft
        refund.state = .pending
        refund.sends = 1
        refund.reference = reference(paymentReference: payment.reference, number: snapshot.count + 1)
        return .new(refund)
    }
}
