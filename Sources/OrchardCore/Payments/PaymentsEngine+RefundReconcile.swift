import ApplePay
import Foundation
import Logging

/// Refunds the shop did not hear back about are not left to it alone: the reconciler turns a
/// refund left pending (its process stopped, or its write failed) unknown, and for every unknown
/// refund asks the processor, then settles it from its records, waits, or re-sends it under its
/// own reference, backing off as for payments, until the processor's answer arrives or the
/// attempts are used up (then an operator checks the processor).
extension PaymentsEngine {
    /// One pass over refunds, counted into `report`.
    func reconcileRefunds(limit: Int, into report: inout ReconcileReport) async {
        // One at a time, leased until its re-send's compare-and-set, as for payments.
        for _ in 0..<limit {
            let now = time.now
            let refund: RefundRecord
            do {
                let leased = try await refunds.leaseRefundsToReconcile(
                    at: now, until: now.addingTimeInterval(policy.lease), pendingBefore: now.addingTimeInterval(-policy.staleAfter),
                    maximumSends: policy.maximumReconcileAttempts, limit: 1)
                guard let first = leased.first else { break }
                refund = first
            } catch {
                logger.error("cannot list refunds to reconcile", metadata: ["error": "\(error)"])
                break
            }
            switch await reconcile(refund, now: now) {
            case .resolved:
                report.refundsResent += 1
                report.refundsResolved += 1
            case .stillUnknown:
                report.refundsResent += 1
            case .settled:
                report.settledByQuery += 1
            case .waiting:
                report.waiting += 1
            case .notDue:
                break
            }
        }
    }

    private enum RefundPass { case resolved, stillUnknown, settled, waiting, notDue }

    /// A refund left pending becomes unknown; an unknown one whose backoff is over is re-sent.
    private func reconcile(_ candidate: RefundRecord, now: Date) async -> RefundPass {
        var refund = candidate
        if refund.state == .pending {
            guard let unknown = try? await refunds.finishRefund(id: refund.id, state: .unknown, outcome: nil, at: now) else {
                return .notDue
            }
            logger.warning(
                "a refund was left pending (the process stopped or its write failed): now unknown, to be re-sent",
                metadata: ["refund": "\(refund.id)", "reference": "\(refund.reference)"])
            refund = unknown
        }
        // Re-sends so far count as attempts: the first waits the first delay, and so on.
        guard let due = policy.nextReconcile(after: refund.sends - 1, now: refund.updatedAt), due <= now,
            let merchant = try? await merchantOf(paymentId: refund.paymentId)
        else { return .notDue }
        let answered = try? await self.refund(
            paymentId: refund.paymentId, merchantIdentifier: merchant, amount: refund.amount, idempotencyKey: refund.idempotencyKey
        ) { until in
            _ = try? await refunds.deferRefund(id: refund.id, until: until)
        }
        // Not sent again: the processor's records settled it, or it waits for them.
        if let answered, answered.sends == refund.sends {
            return answered.state == .unknown ? .waiting : .settled
        }
        if let answered, answered.state != .unknown { return .resolved }
        if refund.sends >= policy.maximumReconcileAttempts {
            logger.error(
                "an unknown refund is still unknown after every re-send: check it in the processor's records",
                metadata: ["refund": "\(refund.id)", "reference": "\(refund.reference)"])
        }
        return .stillUnknown
    }

    private func merchantOf(paymentId: String) async throws -> String? {
        guard let payment = try await orderPayments.payment(id: paymentId) else { return nil }
        return try await orderPayments.order(id: payment.orderId)?.merchantIdentifier
    }
}
