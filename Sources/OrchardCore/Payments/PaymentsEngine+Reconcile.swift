import ApplePay
import Foundation
import Logging

/// Ending `unknown` without an operator: stale pending payments become unknown; for each unknown
/// one the processor is asked first, and its records settle it, or it waits, or it is re-sent
/// under its own reference (as the one rule of ``PaymentsEngine/Policy`` says) until the
/// processor's answer arrives.
extension PaymentsEngine {
    /// What one reconciliation pass did.
    public struct ReconcileReport: Sendable, Equatable {
        /// Pending payments with no call in flight, now unknown.
        public var stale = 0
        /// Re-sends made, and how many of them got a definite answer.
        public var resent = 0
        public var resolved = 0
        /// Unknown payments the reconciler gave up on or cannot re-send: an operator's now.
        public var needOperator = 0
        /// Unknown (or stale pending) refunds re-sent, and how many of them got a definite answer.
        public var refundsResent = 0
        public var refundsResolved = 0
        /// Unknown payments and refunds settled from the processor's records, with nothing re-sent.
        public var settledByQuery = 0
        /// Unknown payments and refunds left as they are for now: the processor has them without
        /// an outcome, does not know them yet, or could not be asked.
        public var waiting = 0

        public init(stale: Int = 0, resent: Int = 0, resolved: Int = 0, needOperator: Int = 0) {
            self.stale = stale
            self.resent = resent
            self.resolved = resolved
            self.needOperator = needOperator
        }
    }

    /// Marks pending payments older than ``Policy/staleAfter`` unknown (due for a re-send at once),
    /// logging each. Run at startup and at the start of every reconciliation pass.
    @discardableResult
    public func recoverStalePending() async -> Int {
        let now = time.now
        let stale: [PaymentRecord]
        do {
            stale = try await orderPayments.stalePendingPayments(before: now.addingTimeInterval(-policy.staleAfter))
        } catch {
            logger.error("cannot look for stale pending payments", metadata: ["error": "\(error)"])
            return 0
        }
        var moved = 0
        for payment in stale {
            // Due at once, unless its re-sends are used up.
            let change = PaymentTransition(
                paymentId: payment.id, orderId: payment.orderId, move: PaymentLifecycle.move(.stale), at: now,
                nextReconcileAt: policy.nextReconcile(after: payment.reconcileAttempts, now: now).map { _ in now }, held: payment)
            guard (try? await orderPayments.transition(change)) != nil else { continue }
            moved += 1
            logger.warning(
                "a payment was left pending (the process stopped or its write failed): now unknown, to be re-sent",
                metadata: [
                    "payment": "\(payment.id)", "order": "\(payment.orderId)", "reference": "\(payment.reference)",
                    "since": "\(payment.updatedAt.formatted(.iso8601))",
                ])
        }
        return moved
    }

    /// One pass: stale pending payments become unknown, then every due unknown payment is re-sent.
    public func reconcile(limit: Int = 50) async -> ReconcileReport {
        var report = ReconcileReport()
        report.stale = await recoverStalePending()
        await reconcileRefunds(limit: limit, into: &report)
        // One at a time: a payment is leased only until its re-send's compare-and-set, so an
        // instance that dies mid-pass hides no more than one payment, for one lease.
        for _ in 0..<limit {
            let now = time.now
            let payment: PaymentRecord
            do {
                let leased = try await orderPayments.leasePaymentsForReconciliation(
                    at: now, until: now.addingTimeInterval(policy.lease), limit: 1)
                guard let first = leased.first else { break }
                payment = first
            } catch {
                logger.error("cannot list unknown payments to reconcile", metadata: ["error": "\(error)"])
                break
            }
            switch await resend(payment) {
            case .resolved:
                report.resent += 1
                report.resolved += 1
            case .stillUnknown(let needsOperator):
                report.resent += 1
                if needsOperator { report.needOperator += 1 }
            case .cannotResend:
                report.needOperator += 1
            case .settled:
                report.settledByQuery += 1
            case .waiting:
                report.waiting += 1
            case .taken:
                break
            }
        }
        return report
    }

    enum ResendResult {
        case resolved
        case stillUnknown(needsOperator: Bool)
        case cannotResend
        /// The processor's records settled it; nothing was sent.
        case settled
        /// Left unknown and unsent until the processor is asked again.
        case waiting
        /// Someone else (a shopper's retry, an operator) moved the payment first.
        case taken
    }

    /// Asks the processor, then settles, waits or re-sends, as the rule says.
    private func resend(_ payment: PaymentRecord) async -> ResendResult {
        let order: OrderRecord
        let processor: any PaymentProcessor
        do {
            (order, processor) = try await orderAndProcessor(of: payment)
        } catch {
            return await cannotResend(payment, error)
        }
        switch await consult(payment, through: processor) {
        case .settle(let outcome):
            return await settle(payment, from: outcome, processor: processor) == nil ? .taken : .settled
        case .wait(let until, _):
            _ = try? await orderPayments.deferReconciliation(paymentId: payment.id, until: until)
            return .waiting
        case .needsOperator:
            _ = try? await orderPayments.deferReconciliation(paymentId: payment.id, until: nil)
            return .cannotResend
        case .resend:
            break
        }
        let request: Resend
        do {
            request = try await rebuild(payment, order: order)
        } catch {
            return await cannotResend(payment, error)
        }
        // Only if nobody sent it since the processor was asked.
        let change = PaymentTransition(
            paymentId: payment.id, orderId: payment.orderId, move: PaymentLifecycle.move(.resend), at: time.now,
            countsReconcileAttempt: true, expectedSends: payment.sends, held: payment)
        guard let claimed = try? await orderPayments.transition(change) else { return .taken }
        do {
            switch request {
            case .payment(let request): _ = try await send(claimed, request, through: processor)
            case .charge(var charge):
                charge.sends = claimed.sends
                _ = try await record(claimed, through: processor, operation: "charge_mandate") {
                    try await processor.chargeMandate(charge)
                }
            }
            return .resolved
        } catch {
            switch error.code {
            case .declined, .processorRejected: return .resolved
            default:
                let needsOperator = claimed.reconcileAttempts >= policy.maximumReconcileAttempts
                if needsOperator {
                    logger.error(
                        "an unknown payment is still unknown after every re-send: resolve it with the processor's records",
                        metadata: ["payment": "\(payment.id)", "reference": "\(payment.reference)"])
                }
                return .stillUnknown(needsOperator: needsOperator)
            }
        }
    }

    /// What a re-send sends: a shopper's payment, or a mandate's merchant-initiated charge.
    enum Resend {
        case payment(AuthorizationRequest)
        case charge(MandateChargeRequest)
    }

    private func cannotResend(_ payment: PaymentRecord, _ error: CoreError) async -> ResendResult {
        logger.error(
            "an unknown payment cannot be re-sent: resolve it with the processor's records (orchard payments resolve)",
            metadata: ["payment": "\(payment.id)", "reason": "\(error.message)"])
        _ = try? await orderPayments.deferReconciliation(paymentId: payment.id, until: nil)
        return .cannotResend
    }

    /// The payment's order, and its processor, which must still be the merchant's.
    private func orderAndProcessor(of payment: PaymentRecord) async throws(CoreError) -> (OrderRecord, any PaymentProcessor) {
        guard let order = try await storage({ try await orderPayments.order(id: payment.orderId) }) else {
            throw CoreError(.notFound, "its order is missing")
        }
        let processor = processors.processor(forMerchant: order.merchantIdentifier)
        guard processor.name == payment.processor else {
            throw CoreError(.invalidState, "it went through \(payment.processor), no longer the merchant's processor")
        }
        return (order, processor)
    }

    /// The request as first sent, from the sealed copy: decrypted again, not verified again (the
    /// token was verified when the shopper sent it, and its signing time has passed since).
    private func rebuild(_ payment: PaymentRecord, order: OrderRecord) async throws(CoreError) -> Resend {
        guard let sealed = try await storage({ try await orderPayments.retryPayload(paymentId: payment.id) }) else {
            throw CoreError(.notFound, "its sealed request is gone")
        }
        do {
            let retry = try vault.unseal(sealed, for: payment.id)
            if let mandateId = retry.mandateId {
                return .charge(try await rebuildCharge(payment, order: order, mandateId: mandateId))
            }
            if let googlePay = retry.googlePayToken {
                return .payment(
                    AuthorizationRequest(
                        order: order, wallet: try rebuildGooglePay(googlePay, payment: payment, order: order), reference: payment.reference,
                        cardholderName: retry.cardholderName))
            }
            guard let token = retry.token else { throw CoreError(.notFound, "its sealed request holds no token") }
            guard let decryptor = decryptor(forMerchant: order.merchantIdentifier) else {
                throw CoreError(.invalidToken, "the merchant has no processing keys")
            }
            // The same encrypted token again; decrypted only where Orchard holds its key, as at the first send.
            let decoded = try token.paymentData.decoded()
            let decrypted = decryptor.key(for: decoded)?.processorHeldScheme == nil ? try decryptor.decrypt(decoded) : nil
            return .payment(
                AuthorizationRequest(
                    order: order, token: token, payment: decrypted, reference: payment.reference,
                    cardholderName: retry.cardholderName, storeCredential: order.priced.agreement.map { CredentialUsage($0.type) }))
        } catch let error as CoreError {
            throw error
        } catch {
            throw CoreError(.invalidToken, "its sealed request cannot be opened or decrypted (\(error))")
        }
    }
}
