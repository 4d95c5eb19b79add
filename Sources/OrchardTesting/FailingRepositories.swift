import Foundation
import OrchardCore
import Synchronization

/// What a failing repository throws: a full disk, or a process killed before its write.
public struct DiskFull: Error {
    public init() {}
}

/// Payments whose moves fail once `failing` is set: the processor answered, and the write of
/// its answer did not happen; and whose next claim can be preceded by another request's work
/// (`beforeClaim`). Every other call goes to the wrapped repository.
public final class FailingOrderPayments: ForwardingOrderPayments {
    public let orderPaymentsTarget: any OrderPayments
    /// True: every move fails with ``DiskFull``.
    public let failing = Atomic<Bool>(false)
    /// Runs once, before the next claim reaches the store: what another request does meanwhile.
    public let beforeClaim = Mutex<(@Sendable () async throws -> Void)?>(nil)

    /// `inner`, not failing yet.
    public init(_ inner: any OrderPayments) { orderPaymentsTarget = inner }

    public func claimPayment(_ claim: PaymentClaim) async throws -> PaymentRecord {
        let meanwhile = beforeClaim.withLock { hook in
            defer { hook = nil }
            return hook
        }
        try await meanwhile?()
        return try await orderPaymentsTarget.claimPayment(claim)
    }

    public func transition(_ change: PaymentTransition) async throws -> PaymentRecord? {
        if failing.load(ordering: .relaxed) { throw DiskFull() }
        return try await orderPaymentsTarget.transition(change)
    }
}

/// Refunds whose outcomes fail once `failing` is set: the processor refunded, and the write of
/// its answer did not happen. Every other call goes to the wrapped repository.
public final class FailingRefunds: ForwardingRefunds {
    public let refundsTarget: any Refunds
    /// True: every outcome's write fails with ``DiskFull``.
    public let failing = Atomic<Bool>(false)

    /// `inner`, not failing yet.
    public init(_ inner: any Refunds) { refundsTarget = inner }

    public func finishRefund(id: String, from: RefundState, state: RefundState, outcome: RefundOutcome?, at date: Date) async throws
        -> RefundRecord?
    {
        if failing.load(ordering: .relaxed) { throw DiskFull() }
        return try await refundsTarget.finishRefund(id: id, from: from, state: state, outcome: outcome, at: date)
    }
}
