import ApplePay
import Foundation
import Logging

/// Asking before re-sending: every path that would send an unknown reference again (a shopper's
/// retry, a retried charge or refund, the reconciler) first asks the processor what it holds for
/// it, and follows ``Policy/resendDecision(_:firstSentAt:lastSentAt:now:)``, the one rule.
extension PaymentsEngine.Policy {
    /// The rule: an outcome the processor holds is recorded; a reference it has without an
    /// outcome, or that it could not be asked about (`lookup` nil), waits; one it does not know
    /// is re-sent only once its records' lag has passed since the last send; one it cannot be
    /// asked about but de-duplicates is re-sent within its de-duplication window only.
    public func resendDecision<Outcome>(_ lookup: ProcessorLookup<Outcome>?, firstSentAt: Date, lastSentAt: Date, now: Date)
        -> ResendDecision<Outcome>
    {
        switch lookup {
        case .found(let outcome):
            return .settle(outcome)
        case .pending:
            return .wait(until: nextQuery(firstSentAt: firstSentAt, now: now), reason: "the processor has it without a final outcome yet")
        case nil:
            return .wait(until: nextQuery(firstSentAt: firstSentAt, now: now), reason: "the processor could not be asked")
        case .notFound(let lag):
            let lag = Self.seconds(lag, otherwise: Self.longest)
            let known = lastSentAt.addingTimeInterval(lag)
            guard now >= known else {
                return .wait(
                    until: known, reason: "the processor does not know it, but its records may lag \(Int(lag)) s behind the last send")
            }
            return .resend
        case .deduplicated(window: nil):
            return .resend
        case .deduplicated(window: let window?):
            let window = Self.seconds(window, otherwise: 0)
            guard now < firstSentAt.addingTimeInterval(window) else {
                return .needsOperator(
                    reason: "the processor de-duplicates a re-send only \(Int(window)) s after the first send, and cannot be asked")
            }
            return .resend
        }
    }

    /// The longest lag or window a processor may name: 30 days.
    static let longest: TimeInterval = 2_592_000

    /// A processor's duration within 0…``longest``; `otherwise` for one that is not a number
    /// (the safe side: the longest lag, no de-duplication).
    static func seconds(_ value: TimeInterval, otherwise: TimeInterval) -> TimeInterval {
        value.isNaN ? otherwise : min(max(value, 0), longest)
    }

    /// When to ask again about a reference the processor holds without an outcome, or could not
    /// be asked about: after as long again as it has been unknown, between the first and the
    /// longest reconcile delays (so a long wait costs few calls).
    func nextQuery(firstSentAt: Date, now: Date) -> Date {
        let age = now.timeIntervalSince(firstSentAt)
        return now.addingTimeInterval(min(max(age.isFinite ? age : 0, firstReconcileDelay), maximumReconcileDelay))
    }
}

extension PaymentsEngine {
    /// Asks the processor about an unknown payment's (or charge's) reference and decides.
    func consult(_ payment: PaymentRecord, through processor: any PaymentProcessor) async -> ResendDecision<AuthorizationOutcome> {
        await consult(
            "payment", operation: "lookup", processor: processor.name, firstSentAt: payment.createdAt, lastSentAt: payment.sentLast,
            metadata: ["payment": "\(payment.id)", "reference": "\(payment.reference)"]
        ) {
            let lookup = try await processor.lookup(payment)
            // Only an authorization or a refusal is an outcome; anything else found is not final yet.
            if case .found(let outcome) = lookup, outcome.status != .authorized && outcome.status != .refused { return .pending }
            return lookup
        }
    }

    /// Asks the processor about an unknown refund's reference and decides.
    func consultRefund(_ refund: RefundRecord, of payment: PaymentRecord, through processor: any PaymentProcessor) async
        -> ResendDecision<RefundOutcome>
    {
        await consult(
            "refund", operation: "refund_lookup", processor: processor.name, firstSentAt: refund.createdAt, lastSentAt: refund.sentLast,
            metadata: ["refund": "\(refund.id)", "reference": "\(refund.reference)"]
        ) { try await processor.lookupRefund(refund, of: payment) }
    }

    /// One question to the processor about a reference whose answer Orchard did not see, and the
    /// policy's decision on its answer, measured and logged; a failed question decides as no answer.
    private func consult<Outcome>(
        _ subject: String, operation: String, processor: String, firstSentAt: Date, lastSentAt: Date, metadata: Logger.Metadata,
        ask: () async throws -> ProcessorLookup<Outcome>
    ) async -> ResendDecision<Outcome> {
        let started = ContinuousClock.now
        // "Not found" proves something only for the moment the processor was asked, not later.
        let asked = time.now
        var lookup: ProcessorLookup<Outcome>?
        do {
            lookup = try await ask()
        } catch {
            logger.warning(
                "the processor could not be asked about an unknown \(subject): nothing is sent",
                metadata: metadata.merging(["error": "\(error)"]) { $1 })
        }
        let decision = policy.resendDecision(lookup, firstSentAt: firstSentAt, lastSentAt: lastSentAt, now: asked)
        EngineMetrics.processorCall(
            processor: processor, operation: operation, outcome: Self.label(lookup), elapsed: ContinuousClock.now - started)
        log(decision, metadata: metadata.merging(["processor": "\(processor)"]) { $1 })
        return decision
    }

    /// Records the outcome the processor's records hold for an unknown payment (an authorized
    /// first payment of an agreement sets its mandate up when the records name a stored
    /// credential); nil when the payment moved meanwhile.
    func settle(_ payment: PaymentRecord, from outcome: AuthorizationOutcome, processor: any PaymentProcessor) async -> PaymentRecord? {
        let event: PaymentLifecycle.Event = outcome.status == .authorized ? .queriedAuthorized : .queriedRefused
        var mandate: MandateRecord?
        var capture: CaptureMode?
        if event == .queriedAuthorized {
            // Unread, the order's mandate and capture would be lost with the move: it waits for the next pass.
            guard let order = try? await orderPayments.order(id: payment.orderId) else { return nil }
            mandate = self.mandate(for: payment, of: order, outcome: outcome, processor: processor.name)
            capture = order.priced.capture
        }
        let change = PaymentTransition(
            paymentId: payment.id, orderId: payment.orderId, move: PaymentLifecycle.move(event), at: time.now, outcome: outcome,
            mandate: mandate, held: payment,
            captureDueAt: AutomaticCapture.dueAt(after: PaymentLifecycle.move(event), capture: capture, now: time.now))
        do {
            guard let settled = try await orderPayments.transition(change) else { return nil }
            if settled.captureDueAt != nil { onCaptureDue?(settled.id) }
            logger.notice(
                "an unknown payment was settled from the processor's records, without a re-send",
                metadata: [
                    "payment": "\(payment.id)", "reference": "\(payment.reference)", "state": "\(settled.state.rawValue)",
                    "code": "\(outcome.code ?? "-")",
                ])
            if mandate != nil { await endIfRetired(settled, through: processor) }
            return settled
        } catch {
            logger.error("the processor's records could not be stored", metadata: ["payment": "\(payment.id)", "error": "\(error)"])
            return nil
        }
    }

    /// What a retry (a shopper's, or a shop's retried charge) may do with an unknown attempt.
    enum RetryGate {
        /// Send it again: it had been sent this often when the processor was asked.
        case resend(sends: Int)
        /// The processor's records settled it (or someone else did meanwhile): nothing is sent.
        case settled(PaymentRecord)
    }

    /// Asks the processor before a retry sends an unknown attempt again; throws `payment_unknown`,
    /// sending nothing, while the rule says wait or an operator must look.
    func gate(_ unknown: PaymentRecord, through processor: any PaymentProcessor) async throws(CoreError) -> RetryGate {
        switch await consult(unknown, through: processor) {
        case .resend:
            return .resend(sends: unknown.sends)
        case .settle(let outcome):
            if let settled = await settle(unknown, from: outcome, processor: processor) { return .settled(settled) }
            if let current = try? await orderPayments.payment(id: unknown.id), PaymentLifecycle.isResolved(current.state) {
                return .settled(current)
            }
            throw CoreError.inProgress
        case .wait, .needsOperator:
            throw CoreError.unknownOutcome
        }
    }

    /// Records the outcome the processor's records hold for an unknown refund; the refund as it
    /// is now when it moved meanwhile.
    func settleRefund(_ refund: RefundRecord, from outcome: RefundOutcome) async throws(CoreError) -> RefundRecord {
        let state: RefundState = outcome.status == .refunded ? .refunded : .refused
        let settled = try await storage {
            try await refunds.finishRefund(id: refund.id, from: .unknown, state: state, outcome: outcome, at: time.now)
        }
        guard let settled else {
            let current = try await storage { try await refunds.refunds(paymentId: refund.paymentId) }.first { $0.id == refund.id }
            return current ?? refund
        }
        logger.notice(
            "an unknown refund was settled from the processor's records, without a re-send",
            metadata: ["refund": "\(refund.id)", "reference": "\(refund.reference)", "state": "\(state.rawValue)"])
        if state == .refunded { await onPaymentChanged?(settled.paymentId) }
        return settled
    }

    private func log<Outcome>(_ decision: ResendDecision<Outcome>, metadata: Logger.Metadata) {
        switch decision {
        case .settle, .resend:
            break
        case .wait(let until, let reason):
            logger.info(
                "not sent again yet: \(reason)", metadata: metadata.merging(["askAgainAt": "\(until.formatted(.iso8601))"]) { $1 })
        case .needsOperator(let reason):
            logger.error("an unknown outcome needs an operator, who checks the processor's records: \(reason)", metadata: metadata)
        }
    }

    private static func label<Outcome>(_ lookup: ProcessorLookup<Outcome>?) -> String {
        switch lookup {
        case .found: "found"
        case .pending: "pending"
        case .notFound: "not_found"
        case .deduplicated: "deduplicated"
        case nil: "no_answer"
        }
    }
}
