import Foundation

/// Refunds of a payment: the payment is the unit of work. A claim locks it and compares its
/// settled amount with its refunds; an outcome is a compare-and-set on the refund's state,
/// with its `payment.refunded` event. Also the background leases on refunds to reconcile.
public protocol Refunds: Sendable {
    /// In one transaction: the payment must be settled and the refund must fit in what pending,
    /// refunded and unknown refunds leave. A refund with the same idempotency key comes back as
    /// it is, or, when unknown, back to pending with one more send (its reference unchanged).
    /// Fails with ``CoreError/Code/invalidState``, ``CoreError/Code/refundTooLarge``,
    /// ``CoreError/Code/idempotencyMismatch`` or ``CoreError/Code/paymentInProgress``.
    func claimRefund(_ draft: RefundRecord) async throws -> RefundRecord
    /// Moves a refund that is in state `from` (pending: its send's answer; unknown: what the
    /// processor's records hold) to its outcome, with `payment.refunded` when refunded; nil when
    /// it was not in state `from`.
    func finishRefund(id: String, from: RefundState, state: RefundState, outcome: RefundOutcome?, at date: Date) async throws
        -> RefundRecord?
    /// Keeps an unknown refund from the reconciler until `date` (the processor is asked again
    /// then); false when it is not unknown.
    func deferRefund(id: String, until date: Date) async throws -> Bool
    func refunds(paymentId: String) async throws -> [RefundRecord]
    /// Leases unknown refunds re-sent fewer than `maximumSends` times, and pending ones untouched
    /// since before `pendingBefore` (no call in flight), least recently changed first, leaving
    /// out those another caller leased until after `date`: in one transaction they are leased
    /// until `leaseEnd`. A lease only keeps other reconcilers off; the shop's own retry with the
    /// refund's Idempotency-Key is not held back by it.
    func leaseRefundsToReconcile(at date: Date, until leaseEnd: Date, pendingBefore: Date, maximumSends: Int, limit: Int)
        async throws -> [RefundRecord]
}

extension Refunds {
    /// Moves a pending refund to its send's outcome.
    public func finishRefund(id: String, state: RefundState, outcome: RefundOutcome?, at date: Date) async throws -> RefundRecord? {
        try await finishRefund(id: id, from: .pending, state: state, outcome: outcome, at: date)
    }
}
