import ApplePay
import Foundation
import Logging

/// A refund of a payment not captured yet (as Stripe refunds an uncaptured charge): nothing is
/// sent back, the amount is released. The whole amount voids the authorization (the back
/// office's cancel: `payment.cancelled`); part of it captures the rest (a partial settle:
/// `payment.settled` with `amountCaptured`). Either way the answer is a refund, `refunded`, with
/// `released: true`, inserted with its `payment.refunded` in the move's own transaction, so
/// the refund exists exactly when the payment moved: a processor that refuses or does not answer
/// leaves the payment authorized and no refund (the shop sends the same request again).
extension PaymentsEngine {
    func release(_ payment: PaymentRecord, amount: Int64, idempotencyKey: String, number: Int) async throws(CoreError)
        -> RefundRecord
    {
        guard amount <= payment.amount else {
            throw CoreError(.refundTooLarge, "the refund of \(amount) is more than the \(payment.amount) authorized")
        }
        let now = time.now
        var refund = RefundRecord(
            id: "re_" + RecordIdentifier.random(), paymentId: payment.id, amount: amount, currency: payment.currency, state: .refunded,
            reference: RefundPolicy.reference(paymentReference: payment.reference, number: number), idempotencyKey: idempotencyKey,
            processorMessage: "released: the payment was not captured, so this amount was never charged", createdAt: now)
        refund.released = true
        let whole = amount == payment.amount
        let result = try await attempt(
            whole ? .cancel : .settle, on: payment, amount: whole ? nil : payment.amount - amount, release: refund)
        guard case .done = result else {
            throw CoreError(.invalidState, "a capture or cancel of this payment is in progress; send the refund again shortly")
        }
        logger.info(
            "an uncaptured payment's refund released its amount",
            metadata: ["payment": "\(payment.id)", "amount": "\(amount)", "voided": "\(whole)"])
        // As stored (a store may keep its times coarser): what a repeat with the same key answers.
        return (try? await refunds.refunds(paymentId: payment.id))?.first { $0.id == refund.id } ?? refund
    }
}
