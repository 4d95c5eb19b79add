import ApplePay
import Foundation
import OrchardCore
import Synchronization

/// Refunds in memory, with the SQLite store's semantics.
extension InMemoryStore {
    public func claimRefund(_ draft: RefundRecord) async throws -> RefundRecord {
        try state.withLock { state in
            let mine = state.refunds.filter { $0.paymentId == draft.paymentId }
            let snapshot = RefundClaimSnapshot(
                payment: state.payments.first { $0.id == draft.paymentId }.map {
                    .init(state: $0.state, amount: $0.amount, reference: $0.reference, amountCaptured: $0.amountCaptured)
                },
                earlier: mine.first { $0.idempotencyKey == draft.idempotencyKey },
                held: Money.sum(mine.filter(\.holdsAmount).map(\.amount)) ?? .max, count: mine.count)
            let decision = try RefundPolicy.decide(draft, snapshot)
            switch decision {
            case .existing: break
            case .resend(let resent):
                guard let index = state.refunds.firstIndex(where: { $0.id == resent.id }) else { break }
                state.refunds[index] = resent
            case .new(let refund):
                state.refunds.append(refund)
            }
            return decision.refund
        }
    }

    public func finishRefund(id: String, from: RefundState, state refundState: RefundState, outcome: RefundOutcome?, at date: Date)
        async throws -> RefundRecord?
    {
        try state.withLock { state in
            guard let index = state.refunds.firstIndex(where: { $0.id == id && $0.state == from }) else { return nil }
            state.refunds[index].state = refundState
            state.refunds[index].processorReference = outcome?.processorReference ?? state.refunds[index].processorReference
            state.refunds[index].processorCode = outcome?.code
            state.refunds[index].processorMessage = outcome?.message
            state.refunds[index].updatedAt = date
            let refund = state.refunds[index]
            if let type = WebhookEventType.refundFinished(refundState),
                let payment = state.payments.first(where: { $0.id == refund.paymentId })
            {
                try Self.appendPaymentEvent(type, payment: payment, refund: refund, to: &state, at: date)
            }
            return refund
        }
    }

    public func leaseRefundsToReconcile(at date: Date, until leaseEnd: Date, pendingBefore: Date, maximumSends: Int, limit: Int)
        async throws -> [RefundRecord]
    {
        state.withLock { state in
            let leases = state.refundLeases
            let candidates = state.refunds.enumerated().filter { _, refund in
                (leases[refund.id].map { $0 <= date } ?? true)
                    && ((refund.state == .unknown && refund.sends <= maximumSends)
                        || (refund.state == .pending && refund.updatedAt < pendingBefore))
            }
            let leased = candidates.sorted { ($0.element.updatedAt, $0.offset) < ($1.element.updatedAt, $1.offset) }.prefix(limit)
                .map(\.element)
            for refund in leased { state.refundLeases[refund.id] = leaseEnd }
            return leased
        }
    }

    public func deferRefund(id: String, until date: Date) async throws -> Bool {
        state.withLock { state in
            guard state.refunds.contains(where: { $0.id == id && $0.state == .unknown }) else { return false }
            state.refundLeases[id] = date
            return true
        }
    }

    public func refunds(paymentId: String) async throws -> [RefundRecord] {
        state.withLock { $0.refunds.filter { $0.paymentId == paymentId } }
    }
}
