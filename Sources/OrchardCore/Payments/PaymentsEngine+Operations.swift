import ApplePay
import Foundation
import Logging

/// The back office's moves: settle, cancel, and an operator's resolve of an unknown payment.
extension PaymentsEngine {
    /// What an operator read in the processor's records for an unknown payment.
    public enum Resolution: String, Sendable, CaseIterable {
        case authorized, refused

        var event: PaymentLifecycle.Event { self == .authorized ? .resolvedAuthorized : .resolvedRefused }
    }

    /// Settles (captures) an authorized payment through its processor, then records it: the
    /// whole amount, or `amount` of it (1 to the authorized amount; the processor releases the
    /// rest where it can). With a merchant, another merchant's payment is not found.
    public func settle(paymentId: String, merchantIdentifier: String? = nil, amount: Int64? = nil) async throws(CoreError)
        -> PaymentRecord
    {
        try await act(.settle, on: paymentId, merchantIdentifier: merchantIdentifier, amount: amount)
    }

    /// Cancels (voids) an authorized payment through its processor, then records it; the order closes.
    public func cancel(paymentId: String, merchantIdentifier: String? = nil) async throws(CoreError) -> PaymentRecord {
        try await act(.cancel, on: paymentId, merchantIdentifier: merchantIdentifier)
    }

    /// Records the processor's outcome of an unknown payment as an operator read it.
    public func resolve(paymentId: String, as resolution: Resolution) async throws(CoreError) -> PaymentRecord {
        let payment = try await requirePayment(paymentId)
        guard payment.state == .unknown else {
            throw CoreError(.invalidState, "only an unknown payment can be resolved; this one is \(payment.state.rawValue)")
        }
        let move = PaymentLifecycle.move(resolution.event)
        // An authorization owes the order's automatic capture, written with it.
        let capture = try await storage({ try await orderPayments.order(id: payment.orderId) })?.priced.capture
        let change = PaymentTransition(
            paymentId: payment.id, orderId: payment.orderId, move: move, at: time.now, held: payment,
            captureDueAt: AutomaticCapture.dueAt(after: move, capture: capture, now: time.now))
        guard let resolved = try await storage({ try await orderPayments.transition(change) }) else {
            throw CoreError(.invalidState, "the payment changed meanwhile (a re-send may be in progress); reload it")
        }
        if resolved.captureDueAt != nil { onCaptureDue?(resolved.id) }
        logger.notice(
            "unknown payment resolved by an operator", metadata: ["payment": "\(payment.id)", "state": "\(resolution.rawValue)"])
        return resolved
    }

    func requirePayment(_ id: String) async throws(CoreError) -> PaymentRecord {
        guard RecordIdentifier.isLookup(id), let payment = try await storage({ try await orderPayments.payment(id: id) }) else {
            throw CoreError(.notFound, "there is no payment \(id)")
        }
        return payment
    }

    /// The processor first, then the record: a processor that refuses leaves the payment authorized.
    private func act(_ event: PaymentLifecycle.Event, on id: String, merchantIdentifier: String?, amount: Int64? = nil)
        async throws(CoreError) -> PaymentRecord
    {
        let payment =
            if let merchantIdentifier { try await requirePayment(id, merchantIdentifier: merchantIdentifier) } else {
                try await requirePayment(id)
            }
        if let amount, !(1...payment.amount).contains(amount) {
            throw CoreError(.invalidRequest, "amount must be 1 to the authorized \(payment.amount) minor units")
        }
        switch try await attempt(event, on: payment, amount: amount) {
        case .done(let updated): return updated
        case .busy:
            throw CoreError(
                .invalidState, "a capture or cancel of this payment is already in progress, or it changed meanwhile; reload it")
        }
    }

    /// What one settle or cancel came to, when the processor did not refuse it.
    enum ActionResult {
        case done(PaymentRecord)
        /// Someone else holds the right to act on the payment (or it moved): nothing was sent.
        case busy
    }

    /// Settles or cancels `payment` through its processor under the operation's lease, then
    /// records it; throws when it cannot be done or the processor refuses (still authorized).
    func attempt(_ event: PaymentLifecycle.Event, on payment: PaymentRecord, amount: Int64? = nil, release: RefundRecord? = nil)
        async throws(CoreError) -> ActionResult
    {
        let move = PaymentLifecycle.move(event)
        let id = payment.id
        guard payment.state == move.from else {
            throw CoreError(
                .invalidState, "only an authorized payment can be \(move.to.rawValue); this one is \(payment.state.rawValue)")
        }
        guard let order = try await storage({ try await orderPayments.order(id: payment.orderId) }) else {
            throw CoreError(.notFound, "the payment's order is missing")
        }
        let processor = processors.processor(forMerchant: order.merchantIdentifier)
        guard processor.name == payment.processor else {
            throw CoreError(
                .invalidState,
                "this payment went through \(payment.processor), which is no longer the merchant's processor; act on it there")
        }
        // One settle or cancel at a time: two concurrent calls (the shop's and an operator's, the
        // automatic capture, or a retry) make one processor call; the other is told it is in progress.
        let now = time.now
        guard
            try await storage({
                try await orderPayments.claimOperation(
                    paymentId: id, in: move.from ?? .authorized, at: now, until: now.addingTimeInterval(policy.operationLease))
            })
        else { return .busy }
        let links = try await call(event, on: payment, through: processor, amount: amount)
        // The move clears any automatic capture still due (a manual capture or a cancel won).
        var change = PaymentTransition(paymentId: id, orderId: payment.orderId, move: move, at: time.now, links: links, held: payment)
        if event == .settle { change.amountCaptured = amount ?? payment.amount }
        change.release = release
        guard let updated = try await storage({ try await orderPayments.transition(change) }) else {
            throw CoreError(.invalidState, "the payment changed meanwhile; reload it")
        }
        logger.info("payment \(move.to.rawValue)", metadata: ["payment": "\(id)", "processor": "\(payment.processor)"])
        await onPaymentChanged?(id)
        return .done(updated)
    }

    /// The processor's settle (of `amount`, or the whole) or cancel; the links a settle answer
    /// offers, joined to the payment's (nil: none new). A refusal gives the operation back.
    private func call(_ event: PaymentLifecycle.Event, on payment: PaymentRecord, through processor: any PaymentProcessor, amount: Int64?)
        async throws(CoreError) -> [String: String]?
    {
        let started = ContinuousClock.now
        do {
            var links: [String: String]?
            if event == .settle {
                // What the processor offers next (its refund links) joins the links it gave at authorization.
                let learned =
                    if let amount, amount != payment.amount {
                        try await processor.settle(payment, amount: amount)
                    } else {
                        try await processor.settle(payment)
                    }
                if !learned.isEmpty { links = payment.links.merging(learned) { $1 } }
            } else {
                try await processor.cancel(payment)
            }
            EngineMetrics.processorCall(
                processor: processor.name, operation: "\(event)", outcome: "accepted", elapsed: ContinuousClock.now - started)
            return links
        } catch {
            EngineMetrics.processorCall(
                processor: processor.name, operation: "\(event)", outcome: error.definite ? "refused" : "no answer",
                elapsed: ContinuousClock.now - started)
            logger.error(
                "processor refused or did not answer a back-office action",
                metadata: ["payment": "\(payment.id)", "action": "\(event)", "error": "\(error)", "definite": "\(error.definite)"])
            guard error.definite else {
                // It may have been made: the operation stays leased until its lease ends, so no
                // other call races the processor's late answer, and nothing calls it refused.
                throw CoreError(
                    .paymentUnknown,
                    "\(payment.processor) gave no definite answer to the \(event == .settle ? "capture" : "cancel"); it may have been made. Ask again after a minute (the same request is sent) or check the payment at \(payment.processor): \(error.description)"
                )
            }
            // Still authorized: the next settle or cancel may go at once.
            _ = try? await orderPayments.releaseOperation(paymentId: payment.id)
            throw CoreError(.processorRejected, "\(payment.processor) did not accept the request: \(error.description)")
        }
    }
}
