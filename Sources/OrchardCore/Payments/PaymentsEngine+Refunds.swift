import ApplePay
import Foundation
import Logging

/// Refunds of settled payments: claimed against what is left, sent under their own reference,
/// recorded as the processor answered. An answer not seen leaves the refund unknown; the same
/// Idempotency-Key asks the processor about it, and re-sends the same reference only as the one
/// rule of ``PaymentsEngine/Policy`` allows.
extension PaymentsEngine {
    /// Refunds `amount` (nil: all that is left) of a settled payment of `merchantIdentifier`.
    public func refund(
        paymentId: String, merchantIdentifier: String, amount: Int64?, idempotencyKey: String
    ) async throws(CoreError) -> RefundRecord {
        try await refund(
            paymentId: paymentId, merchantIdentifier: merchantIdentifier, amount: amount, idempotencyKey: idempotencyKey,
            waiting: { _ in })
    }

    /// As the public `refund`; `waiting` is told when an unknown refund is left unsent and until
    /// when (the reconciler keeps it aside until then).
    func refund(
        paymentId: String, merchantIdentifier: String, amount: Int64?, idempotencyKey: String, waiting: (Date) async -> Void
    ) async throws(CoreError) -> RefundRecord {
        let payment = try await requirePayment(paymentId, merchantIdentifier: merchantIdentifier)
        let refunded = try await storage { try await refunds.refunds(paymentId: paymentId) }
        // What was captured bounds the refunds (the policy checks it again in the claim).
        let left = (payment.captured ?? payment.amount) - refunded.filter(\.holdsAmount).reduce(0) { $0 + $1.amount }
        let earlier = refunded.first { $0.idempotencyKey == idempotencyKey }
        let wanted = amount ?? earlier?.amount ?? left
        guard wanted > 0 else {
            throw CoreError(.refundTooLarge, amount == nil ? "nothing is left to refund" : "a refund amount must be positive")
        }
        // Not captured yet: the amount is released instead (a repeat finds its refund, below).
        if earlier == nil, payment.state == .authorized {
            return try await release(payment, amount: wanted, idempotencyKey: idempotencyKey, number: refunded.count + 1)
        }
        let now = time.now
        var draft = RefundRecord(
            id: "re_" + RecordIdentifier.random(), paymentId: paymentId, amount: wanted, currency: payment.currency, state: .pending,
            reference: "", idempotencyKey: idempotencyKey, createdAt: now, lastSentAt: now)
        if let earlier, earlier.state == .unknown, earlier.amount == wanted {
            // The processor is asked before the same reference goes out again.
            let processor = processors.processor(forMerchant: merchantIdentifier)
            guard processor.name == payment.processor else {
                throw CoreError(
                    .invalidState, "this payment went through \(payment.processor), which is no longer the merchant's processor")
            }
            switch await consultRefund(earlier, of: payment, through: processor) {
            case .settle(let outcome):
                return try await settleRefund(earlier, from: outcome)
            case .wait(let until, _):
                await waiting(until)
                return earlier
            case .needsOperator:
                await waiting(now.addingTimeInterval(policy.maximumReconcileDelay))
                return earlier
            case .resend:
                draft.sends = earlier.sends
            }
        }
        let claimed: RefundRecord
        do {
            claimed = try await refunds.claimRefund(draft)
        } catch let error as CoreError {
            throw Self.refusal(error)
        } catch {
            throw CoreError(.storage, "the refund could not be recorded; nothing was refunded")
        }
        guard claimed.state == .pending else { return claimed }
        let processor = processors.processor(forMerchant: merchantIdentifier)
        guard processor.name == payment.processor else {
            _ = try? await refunds.finishRefund(id: claimed.id, state: .refused, outcome: nil, at: time.now)
            throw CoreError(
                .invalidState, "this payment went through \(payment.processor), which is no longer the merchant's processor")
        }
        return try await send(claimed, of: payment, through: processor)
    }

    private func send(_ refund: RefundRecord, of payment: PaymentRecord, through processor: any PaymentProcessor)
        async throws(CoreError) -> RefundRecord
    {
        var metadata: Logger.Metadata = [
            "payment": "\(payment.id)", "refund": "\(refund.id)", "reference": "\(refund.reference)", "send": "\(refund.sends)",
            "amount": "\(refund.amount) \(refund.currency)",
        ]
        var outcome: RefundOutcome?
        let started = ContinuousClock.now
        do {
            outcome = try await processor.refund(
                RefundRequest(payment: payment, amount: refund.amount, reference: refund.reference, sends: refund.sends))
        } catch {
            metadata["error"] = "\(error)"
        }
        // A refusal of a re-send may mean the first send refunded: only an operator can tell.
        let state: RefundState =
            switch outcome?.status {
            case .refunded: .refunded
            case .refused: refund.sends == 1 ? .refused : .unknown
            case nil: .unknown
            }
        EngineMetrics.processorCall(
            processor: processor.name, operation: "refund", outcome: state.rawValue, elapsed: ContinuousClock.now - started)
        let finished: RefundRecord?
        do {
            finished = try await refunds.finishRefund(id: refund.id, state: state, outcome: outcome, at: time.now)
        } catch {
            logger.critical("the processor answered a refund but the answer could not be stored", metadata: metadata)
            throw CoreError(.paymentUnknown, "the refund's outcome could not be recorded; retry with the same Idempotency-Key")
        }
        guard let finished else { throw CoreError(.invalidState, "the refund changed meanwhile; reload it") }
        metadata["state"] = "\(state.rawValue)"
        logger.log(level: state == .refunded ? .info : .error, "refund \(state.rawValue)", metadata: metadata)
        if state == .refunded { await onPaymentChanged?(finished.paymentId) }
        return finished
    }

    /// A payment of this merchant; another merchant's is "not found".
    public func requirePayment(_ id: String, merchantIdentifier: String) async throws(CoreError) -> PaymentRecord {
        let payment = try await requirePayment(id)
        guard let order = try await storage({ try await orderPayments.order(id: payment.orderId) }),
            order.merchantIdentifier == merchantIdentifier
        else { throw CoreError(.notFound, "there is no payment \(id)") }
        return payment
    }

    static func refusal(_ error: CoreError) -> CoreError {
        switch error.code {
        case .refundTooLarge: CoreError(.refundTooLarge, error.message)
        case .idempotencyMismatch: CoreError(.idempotencyMismatch, error.message)
        case .invalidState: CoreError(.invalidState, error.message)
        case .paymentInProgress: CoreError(.paymentUnknown, error.message)
        default: CoreError(.storage, "the refund could not be recorded; nothing was refunded")
        }
    }
}
