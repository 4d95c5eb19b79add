import Foundation
import OrchardCore
import OrchardTesting
import Synchronization

/// What a failing repository throws: a full disk, or a process killed before its write.
struct DiskFull: Error {}

/// Payments whose moves fail once `failing` is set: the processor answered, and the write of
/// its answer did not happen; and whose next claim can be preceded by another request's work
/// (`beforeClaim`). Every other call goes to the wrapped repository.
final class FailingOrderPayments: ForwardingOrderPayments {
    let orderPaymentsTarget: any OrderPayments
    let failing = Atomic<Bool>(false)
    /// Runs once, before the next claim reaches the store: what another request does meanwhile.
    let beforeClaim = Mutex<(@Sendable () async throws -> Void)?>(nil)

    init(_ inner: any OrderPayments) { orderPaymentsTarget = inner }

    func claimPayment(_ claim: PaymentClaim) async throws -> PaymentRecord {
        let meanwhile = beforeClaim.withLock { hook in
            defer { hook = nil }
            return hook
        }
        try await meanwhile?()
        return try await orderPaymentsTarget.claimPayment(claim)
    }

    func transition(_ change: PaymentTransition) async throws -> PaymentRecord? {
        if failing.load(ordering: .relaxed) { throw DiskFull() }
        return try await orderPaymentsTarget.transition(change)
    }
}

/// Refunds whose outcomes fail once `failing` is set: the processor refunded, and the write of
/// its answer did not happen. Every other call goes to the wrapped repository.
final class FailingRefunds: ForwardingRefunds {
    let refundsTarget: any Refunds
    let failing = Atomic<Bool>(false)

    init(_ inner: any Refunds) { refundsTarget = inner }

    func finishRefund(id: String, from: RefundState, state: RefundState, outcome: RefundOutcome?, at date: Date) async throws
        -> RefundRecord?
    {
        if failing.load(ordering: .relaxed) { throw DiskFull() }
        return try await refundsTarget.finishRefund(id: id, from: from, state: state, outcome: outcome, at: date)
    }
}
