import ApplePay
import Foundation
import Synchronization

/// How the mock processors answer the next refunds (kept until changed, like ``MockProcessorBehaviour``).
public enum MockRefundBehaviour: Sendable, Equatable {
    /// Refund what is asked, within what is settled and not refunded yet.
    case accept
    /// Answer with this HTTP status and an error body, refunding nothing (5xx; 409 is Worldline's "in progress").
    case status(Int)
    /// Refund, then reset the connection without answering (re-sends too, answered as the first).
    case dropAfterRefund
    /// The acquirer declines the refund: Worldline answers 402 with a `REJECTED` refund, Worldpay 400 with this code.
    case reject(code: String, description: String)
    /// Worldline: take the refund with this status (`CREATED`, `PENDING_APPROVAL`: not taken
    /// for payout yet), which GetRefunds shows until ``MockProcessors/setWorldlineRefundStatus(_:ofRefund:)``.
    case worldlineStatus(String)
}

/// A refund the mock made: one per reference, whatever the re-sends.
public struct MockRefund: Sendable, Equatable {
    public var processor: String
    /// The refunded payment's reference (Worldpay's `transactionReference`, Worldline's idempotence key).
    public var paymentReference: String
    /// The refund's own reference (Worldpay's body `reference`, Worldline's idempotence key).
    public var reference: String?
    /// The processor's ID for the refund (Worldpay's `commandId`, Worldline's refund `id`).
    public var id: String
    public var amount: Int64
    public var currency: String
    /// Worldline's status for it (Worldpay's refunds keep the default).
    public var status = "REFUND_REQUESTED"
    /// Worldline: the `references.merchantReference` it was asked with.
    public var merchantReference: String?
    /// When it was made, on the mock's clock: what Payment Queries' lag counts from.
    public var madeAt: Date = .distantPast

    /// Whether it counts against what is left to refund.
    var holdsAmount: Bool { status != "REJECTED" && status != "CANCELLED" }
}

/// Refunds of settled payments, for every processor mock: per payment, never more than what was
/// settled (the whole amount: the mocks settle in full) less what was refunded; idempotent on the
/// refund's reference, whose first answer every re-send gets again.
extension MockProcessors {
    /// How the next refunds are answered.
    public var refundBehaviour: MockRefundBehaviour {
        get { state.withLock { $0.refundBehaviour } }
        set { state.withLock { $0.refundBehaviour = newValue } }
    }

    /// Every refund made, oldest first.
    public var refunds: [MockRefund] { state.withLock { $0.refunds } }

    /// The refunds made on the payment with this reference (Orchard's `<orderId>-<n>`), oldest first.
    public func refunds(forPayment reference: String) -> [MockRefund] {
        refunds.filter { $0.paymentReference == reference }
    }

    /// What is settled on the payment with this reference and what of it is refunded.
    public func balance(forPayment reference: String) -> (settled: Int64, refunded: Int64) {
        state.withLock { state in
            let settled = state.charges.filter { $0.reference == reference && $0.state == .settled }.map(\.settledAmount).reduce(0, +)
            return (settled, state.refunds.filter { $0.paymentReference == reference }.map(\.amount).reduce(0, +))
        }
    }

    /// What one refund asks for, as read from either processor's request.
    struct RefundAsk {
        var processor: String
        /// The charge's ID (Worldpay's link key, Worldline's payment ID).
        var chargeId: String
        /// The idempotency reference; nil: none (each send is a new refund).
        var reference: String?
        /// nil: the whole settled amount.
        var amount: Int64?
        var currency: String?
        /// Worldline's `references.merchantReference`, echoed in its answers.
        var merchantReference: String?
    }

    /// Why the mock refuses a refund.
    enum RefundRefusal {
        /// The request cannot be done: the payment is not settled, or is in another currency.
        case invalid(String)
        /// The amount is above what is settled and not refunded yet.
        case tooMuch(String)
        /// The acquirer declined it (``MockRefundBehaviour/reject(code:description:)``).
        case declined(code: String, description: String, refundId: String)
    }

    /// The processor's shapes for a refund's answers, and its refund IDs.
    struct RefundAnswers {
        /// The processor's ID for a refund of the charge with this ID; `serial` is unique per request.
        var refundId: (_ chargeId: String, _ serial: Int) -> String
        var accepted: (_ refund: MockRefund) -> (Int, [UInt8])
        var refused: (RefundRefusal) -> (Int, [UInt8])
        var notFound: Reply
        var fault: (Int) -> [UInt8]
        var replayHeaders: [(String, String)] = []
    }

    /// Runs one refund under ``refundBehaviour``: a known reference gets its first answer again.
    func refund(_ ask: RefundAsk, _ answers: RefundAnswers) -> Reply {
        let behaviour = state.withLock { $0.refundBehaviour }
        if case .status(let status) = behaviour { return .answer(status: status, body: answers.fault(status), headers: []) }
        let key = ask.reference.map { "\(ask.processor)-refund:\(ask.chargeId):\($0)" }
        let outcome: (answer: (Int, [UInt8]), replayed: Bool)? = state.withLock { state in
            if let key, let previous = state.answers[key] { return ((previous.status, previous.body), true) }
            guard let charge = state.charges.first(where: { $0.processor == ask.processor && $0.id == ask.chargeId }) else { return nil }
            let made = state.refunds.filter { $0.processor == ask.processor && $0.paymentReference == charge.reference && $0.holdsAmount }
            let left = charge.settledAmount - made.map(\.amount).reduce(0, +)
            let amount = ask.amount ?? charge.settledAmount
            // Unique per request: a declined refund has an ID too.
            let serial = state.received.count
            let id = answers.refundId(charge.id, serial)
            let answer: (Int, [UInt8])
            if charge.state != .settled {
                answer = answers.refused(.invalid("the payment is \(charge.state.rawValue), not settled"))
            } else if let currency = ask.currency, currency != charge.currency {
                answer = answers.refused(.invalid("the payment is in \(charge.currency), not \(currency)"))
            } else if amount > left {
                answer = answers.refused(.tooMuch("\(amount) is more than the \(left) left to refund"))
            } else if case .reject(let code, let description) = behaviour {
                answer = answers.refused(.declined(code: code, description: description, refundId: id))
            } else {
                var refund = MockRefund(
                    processor: ask.processor, paymentReference: charge.reference, reference: ask.reference, id: id, amount: amount,
                    currency: charge.currency)
                refund.madeAt = state.clock.now
                refund.merchantReference = ask.merchantReference
                if case .worldlineStatus(let status) = behaviour { refund.status = status }
                state.refunds.append(refund)
                answer = answers.accepted(refund)
            }
            if let key { state.answers[key] = (answer.0, answer.1) }
            return (answer, false)
        }
        guard let outcome else { return answers.notFound }
        // Every answer is dropped meanwhile, a re-send's too (libcurl re-sends once on a reused connection reset).
        if behaviour == .dropAfterRefund { return .drop }
        return .answer(status: outcome.answer.0, body: outcome.answer.1, headers: outcome.replayed ? answers.replayHeaders : [])
    }
}
