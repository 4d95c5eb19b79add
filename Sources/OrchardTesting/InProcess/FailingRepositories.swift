import Foundation
import OrchardCore
import Synchronization

/// What a failing repository throws: a full disk, or a process killed before its write.
public struct DiskFull: Error {
    public init() {}
}

/// Payments whose moves fail once `failing` is set: the processor answered, and the write of
/// its answer did not happen; and whose next claim can be preceded by another request's work
/// (`beforeClaim`). Every other call goes to the wrapped repository. Put it in
/// ``Repositories/orderPayments`` to fail one engine's or server's payments.
public final class FailingOrderPayments: OrderPayments {
    /// The repository every call reaches unless it fails here.
    public let inner: any OrderPayments
    /// True: every move fails with ``DiskFull``.
    public let failing = Atomic<Bool>(false)
    /// Runs once, before the next claim reaches the store: what another request does meanwhile.
    public let beforeClaim = Mutex<(@Sendable () async throws -> Void)?>(nil)

    /// `inner`, not failing yet.
    public init(_ inner: any OrderPayments) { self.inner = inner }

    public func claimPayment(_ claim: PaymentClaim) async throws -> PaymentRecord {
        let meanwhile = beforeClaim.withLock { hook in
            defer { hook = nil }
            return hook
        }
        try await meanwhile?()
        return try await inner.claimPayment(claim)
    }

    public func transition(_ change: PaymentTransition) async throws -> PaymentRecord? {
        if failing.load(ordering: .relaxed) { throw DiskFull() }
        return try await inner.transition(change)
    }

    // Every other call, unchanged.

    public func insert(_ order: OrderRecord) async throws { try await inner.insert(order) }
    public func order(id: String) async throws -> OrderRecord? { try await inner.order(id: id) }
    public func claimableOrder(id: String, remembered: Bool) async throws -> ClaimableOrder? {
        try await inner.claimableOrder(id: id, remembered: remembered)
    }
    public func updateOpen(_ order: OrderRecord) async throws { try await inner.updateOpen(order) }
    public func retryPayload(paymentId: String) async throws -> [UInt8]? { try await inner.retryPayload(paymentId: paymentId) }
    public func leasePaymentsForReconciliation(at date: Date, until leaseEnd: Date, limit: Int) async throws -> [PaymentRecord] {
        try await inner.leasePaymentsForReconciliation(at: date, until: leaseEnd, limit: limit)
    }
    public func stalePendingPayments(before date: Date) async throws -> [PaymentRecord] {
        try await inner.stalePendingPayments(before: date)
    }
    public func leasePaymentsForCapture(at date: Date, until leaseEnd: Date, limit: Int) async throws -> [PaymentRecord] {
        try await inner.leasePaymentsForCapture(at: date, until: leaseEnd, limit: limit)
    }
    public func recordCaptureRefusal(_ refusal: CaptureRefusal) async throws -> PaymentRecord? {
        try await inner.recordCaptureRefusal(refusal)
    }
    public func claimOperation(paymentId: String, in state: PaymentState, at date: Date, until leaseEnd: Date) async throws -> Bool {
        try await inner.claimOperation(paymentId: paymentId, in: state, at: date, until: leaseEnd)
    }
    public func releaseOperation(paymentId: String) async throws { try await inner.releaseOperation(paymentId: paymentId) }
    public func deferReconciliation(paymentId: String, until date: Date?) async throws -> Bool {
        try await inner.deferReconciliation(paymentId: paymentId, until: date)
    }
    public func payments(orderId: String) async throws -> [PaymentRecord] { try await inner.payments(orderId: orderId) }
    public func payment(id: String) async throws -> PaymentRecord? { try await inner.payment(id: id) }
    public func payments(state: PaymentState?, limit: Int) async throws -> [PaymentRecord] {
        try await inner.payments(state: state, limit: limit)
    }
}

/// Refunds whose outcomes fail once `failing` is set: the processor refunded, and the write of
/// its answer did not happen. Every other call goes to the wrapped repository. Put it in
/// ``Repositories/refunds`` to fail one server's refunds.
public final class FailingRefunds: Refunds {
    /// The repository every call reaches unless it fails here.
    public let inner: any Refunds
    /// True: every outcome's write fails with ``DiskFull``.
    public let failing = Atomic<Bool>(false)

    /// `inner`, not failing yet.
    public init(_ inner: any Refunds) { self.inner = inner }

    public func finishRefund(id: String, from: RefundState, state: RefundState, outcome: RefundOutcome?, at date: Date) async throws
        -> RefundRecord?
    {
        if failing.load(ordering: .relaxed) { throw DiskFull() }
        return try await inner.finishRefund(id: id, from: from, state: state, outcome: outcome, at: date)
    }

    // Every other call, unchanged.

    public func claimRefund(_ draft: RefundRecord) async throws -> RefundRecord { try await inner.claimRefund(draft) }
    public func deferRefund(id: String, until date: Date) async throws -> Bool { try await inner.deferRefund(id: id, until: date) }
    public func refunds(paymentId: String) async throws -> [RefundRecord] { try await inner.refunds(paymentId: paymentId) }
    public func leaseRefundsToReconcile(at date: Date, until leaseEnd: Date, pendingBefore: Date, maximumSends: Int, limit: Int)
        async throws -> [RefundRecord]
    {
        try await inner.leaseRefundsToReconcile(
            at: date, until: leaseEnd, pendingBefore: pendingBefore, maximumSends: maximumSends, limit: limit)
    }
}
