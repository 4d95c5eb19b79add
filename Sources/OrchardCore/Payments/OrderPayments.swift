import ApplePay
import Foundation

/// Orders and their payments: the order is the unit of work. Claiming a payment and moving it
/// lock the order and compare-and-set the payment's (and the order's) state in one
/// transaction, with the moves' webhook events; a first payment that sets up a mandate creates
/// it in the same transaction (``PaymentTransition/mandate``). Also the background leases on
/// unknown payments, the settle and cancel rights, and the sealed requests kept for re-sends.
public protocol OrderPayments: Sendable {
    func insert(_ order: OrderRecord) async throws
    func order(id: String) async throws -> OrderRecord?
    /// The order a payment is about to claim, with what a store that claims without reading again
    /// read with it (``PaymentClaimBasis``), in one read. With `remembered`, a store may answer
    /// with the order as it last wrote it, without a read (``ClaimableOrder/remembered``): the
    /// claim's compare-and-set finds whether it is still so.
    func claimableOrder(id: String, remembered: Bool) async throws -> ClaimableOrder?
    /// Replaces an open order's pricing with `order`'s, a compare-and-set on its price version:
    /// the stored order must be at `order.priceVersion - 1` (``OrderRecord/repriced(_:)`` makes
    /// such a record). Fails with ``CoreError/Code/orderNotOpen`` when the order is not open and
    /// ``CoreError/Code/orderChanged`` when it is at another version, and then changes nothing.
    func updateOpen(_ order: OrderRecord) async throws
    /// In one transaction: claims the token's transaction ID, then either opens a new attempt on an
    /// open order (a new reference, `<orderId>-<n>`) or takes the order's unknown attempt back to
    /// `pending` to re-send its reference. The order becomes `pending`. Fails with
    /// ``CoreError/Code/duplicateTransaction``, ``CoreError/Code/paymentInProgress`` or
    /// ``CoreError/Code/orderNotOpen`` and then changes nothing.
    func claimPayment(_ claim: PaymentClaim) async throws -> PaymentRecord
    /// Applies one move of ``PaymentLifecycle`` as a compare-and-set on the payment's (and the
    /// order's) expected state, in one transaction; nil, changing nothing, when either was elsewhere.
    func transition(_ change: PaymentTransition) async throws -> PaymentRecord?
    /// The sealed request kept for re-sending an unresolved payment; nil once it is resolved.
    func retryPayload(paymentId: String) async throws -> [UInt8]?
    /// Leases unknown payments whose next re-send is due at `date`, oldest due first: in one
    /// transaction their next re-send moves to `leaseEnd` (the records come back so), so no other
    /// caller gets them before then. The holder re-sends each with the `resend` move before
    /// `leaseEnd`; one it leaves is due again at `leaseEnd`.
    func leasePaymentsForReconciliation(at date: Date, until leaseEnd: Date, limit: Int) async throws -> [PaymentRecord]
    /// Pending payments untouched since before `date`: their process died or its write failed.
    func stalePendingPayments(before date: Date) async throws -> [PaymentRecord]
    /// Takes the right to act on a payment in `state` (a settle or cancel at its processor) until
    /// `leaseEnd`: false when it is in another state or someone else holds an unexpired right.
    /// Every move of the payment gives it back, as does ``releaseOperation(paymentId:)``; a
    /// holder that dies lets it run out.
    func claimOperation(paymentId: String, in state: PaymentState, at date: Date, until leaseEnd: Date) async throws -> Bool
    /// Gives back the right ``claimOperation(paymentId:in:at:until:)`` took (the processor refused).
    func releaseOperation(paymentId: String) async throws
    /// Leases authorized payments whose automatic capture is due at `date`, oldest due first: in
    /// one transaction their due time moves to `leaseEnd` (the records come back so), so no other
    /// caller takes them before then; a capture its holder does not finish is due again then.
    func leasePaymentsForCapture(at date: Date, until leaseEnd: Date, limit: Int) async throws -> [PaymentRecord]
    /// Records a refused automatic capture (``CaptureRefusal/applied(to:stored:)``) by
    /// compare-and-set on the payment still `authorized`, owing a capture, with
    /// `refusalsBefore` refusals; with its event, if any, in the same transaction. Nil, changing
    /// nothing, when the payment was otherwise (captured or cancelled meanwhile).
    func recordCaptureRefusal(_ refusal: CaptureRefusal) async throws -> PaymentRecord?
    /// Moves an unknown payment's next re-send (nil: none, an operator's); not a state change.
    func deferReconciliation(paymentId: String, until date: Date?) async throws -> Bool
    func payments(orderId: String) async throws -> [PaymentRecord]
    func payment(id: String) async throws -> PaymentRecord?
    /// Newest first; every state when `state` is nil.
    func payments(state: PaymentState?, limit: Int) async throws -> [PaymentRecord]
}

extension OrderPayments {
    /// The order alone, read: the claim reads what it decides from.
    public func claimableOrder(id: String, remembered: Bool) async throws -> ClaimableOrder? {
        try await order(id: id).map { ClaimableOrder(order: $0) }
    }
}
