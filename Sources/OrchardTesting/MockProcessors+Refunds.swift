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

/// Refunds of settled payments for both mock processors: per payment, never more than what was
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
            let settled = state.charges.filter { $0.reference == reference && $0.state == .settled }.map(\.amount).reduce(0, +)
            return (settled, state.refunds.filter { $0.paymentReference == reference }.map(\.amount).reduce(0, +))
        }
    }

    /// The refund routes, or nil for another request.
    func refundRoute(_ request: MockProcessorRequest) -> Reply? {
        guard request.method == "POST" else { return nil }
        if request.path.hasPrefix("/payments/settlements/refunds/") { return worldpayRefund(request) }
        let prefix = "/v2/\(worldline.merchantId)/payments/"
        if request.path.hasPrefix(prefix) && request.path.hasSuffix("/refund") { return worldlineRefund(request, prefix: prefix) }
        return nil
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

    /// The processor's shapes for a refund's answers.
    struct RefundAnswers {
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
            let left = charge.amount - made.map(\.amount).reduce(0, +)
            let amount = ask.amount ?? charge.amount
            // Unique per request: a declined refund has an ID too.
            let serial = state.received.count
            let id = ask.processor == "worldpay" ? "cmd\(serial)-\(charge.id)" : "\(charge.id.split(separator: "_")[0])_\(serial)"
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

    // MARK: Worldpay Access

    /// `POST` to the settle answer's `payments:refund` (no body needed; an optional `reference`)
    /// or `payments:partialRefund` link (`value` and `reference` required). The refusal error
    /// names are this mock's own: Worldpay documents the 4xx shape, not refunds' names.
    func worldpayRefund(_ request: MockProcessorRequest) -> Reply {
        func error(_ status: Int, _ name: String, _ message: String) -> Reply {
            Self.reply(status, ["errorName": name, "message": message])
        }
        if let denied = worldpayAuthorized(request) { return denied }
        let mediaType = "application/vnd.worldpay.payments-v7+json"
        guard request.header("Content-Type") == mediaType else {
            return error(415, "headerHasInvalidValue", "Content-Type must be \(mediaType)")
        }
        let parts = request.path.split(separator: "/")
        guard parts.count == 5, ["full", "partials"].contains(parts[3]) else { return error(404, "urlNotFound", "no such resource") }
        let partial = parts[3] == "partials"
        let body =
            request.body.isEmpty ? [:] : (try? JSONSerialization.jsonObject(with: Data(request.body)) as? [String: Any])
        guard let body else { return error(400, "bodyIsNotJson", "The body is not JSON") }
        let reference = body["reference"] as? String
        let value = body["value"] as? [String: Any]
        var problems: [String] = []
        if let reference, reference.isEmpty || reference.count > 64 { problems.append("reference: 1–64 characters") }
        if partial {
            if reference == nil { problems.append("reference: required") }
            if (Self.integer(value?["amount"]) ?? 0) < 1 { problems.append("value.amount: a positive integer in minor units") }
            if !Self.isCurrency(value?["currency"]) { problems.append("value.currency: ISO 4217 code") }
        }
        guard problems.isEmpty else {
            return Self.reply(
                400,
                [
                    "errorName": "bodyDoesNotMatchSchema", "message": "The json body provided does not match the expected schema",
                    "validationErrors": problems.map { ["errorName": "fieldIsInvalid", "message": $0] },
                ])
        }
        let ask = RefundAsk(
            processor: "worldpay", chargeId: String(parts[4]), reference: reference, amount: partial ? Self.integer(value?["amount"]) : nil,
            currency: partial ? value?["currency"] as? String : nil)
        let events = "\(baseURL)/payments/events/\(parts[4])"
        return refund(
            ask,
            RefundAnswers(
                accepted: { refund in
                    (202, Self.body(["commandId": refund.id, "_links": ["payments:events": ["href": events]]]))
                },
                refused: { refusal in
                    switch refusal {
                    case .invalid(let message): (400, Self.body(["errorName": "entityIsInWrongState", "message": message]))
                    case .tooMuch(let message): (400, Self.body(["errorName": "amountExceedsRemaining", "message": message]))
                    case .declined(let code, let description, _): (400, Self.body(["errorName": code, "message": description]))
                    }
                },
                notFound: error(404, "urlNotFound", "no such payment"),
                fault: { status in Self.body(["errorName": "internalErrorOccurred", "message": "Injected fault \(status)"]) }))
    }

    // MARK: Worldline Direct

    /// `POST /v2/{merchantId}/payments/{paymentId}/refund`, signed, with an idempotence key: a
    /// refusal of the refund itself is 402 with `refundResult` `REJECTED`; one of the request
    /// (not settled, too much) is 400 with `errors`, whose IDs are this mock's own.
    func worldlineRefund(_ request: MockProcessorRequest, prefix: String) -> Reply {
        guard worldlineSignatureValid(request), worldlineDateFresh(request) else {
            return worldlineError(401, "AUTHORIZATION_FAILED", "the request signature or its Date header is invalid")
        }
        if let refusal = worldlineKeyRefusal(request) { return refusal }
        guard request.header("Content-Type")?.hasPrefix("application/json") == true else {
            return worldlineError(415, "UNSUPPORTED_MEDIA_TYPE", "Content-Type must be application/json")
        }
        let rest = request.path.dropFirst(prefix.count).split(separator: "/")
        guard rest.count == 2 else { return worldlineError(404, "NOT_FOUND", "no such action") }
        guard let body = try? JSONSerialization.jsonObject(with: Data(request.body)) as? [String: Any] else {
            return worldlineError(400, "INVALID_JSON", "the body is not JSON")
        }
        let money = body["amountOfMoney"] as? [String: Any] ?? [:]
        guard let amount = Self.integer(money["amount"]), amount > 0 else {
            return worldlineError(400, "INVALID_VALUE", "amount must be a positive integer", property: "amountOfMoney.amount")
        }
        guard Self.isCurrency(money["currencyCode"]) else {
            return worldlineError(400, "INVALID_VALUE", "currencyCode must be ISO 4217", property: "amountOfMoney.currencyCode")
        }
        guard let key = request.header("X-GCS-Idempotence-Key"), !key.isEmpty else {
            return worldlineError(400, "PARAMETER_NOT_FOUND_IN_REQUEST", "this mock requires X-GCS-Idempotence-Key")
        }
        let merchantReference = (body["references"] as? [String: Any])?["merchantReference"] as? String
        func error(_ status: Int, _ id: String, _ code: String, _ message: String) -> [String: Any] {
            ["errorId": UUID().uuidString, "errors": [["errorCode": code, "id": id, "message": message, "httpStatusCode": status]]]
        }
        return refund(
            RefundAsk(
                processor: "worldline", chargeId: String(rest[0]), reference: key, amount: amount,
                currency: money["currencyCode"] as? String, merchantReference: merchantReference),
            RefundAnswers(
                accepted: { refund in (201, Self.body(Self.worldlineRefund(refund))) },
                refused: { refusal in
                    switch refusal {
                    case .invalid(let message): return (400, Self.body(error(400, "INVALID_PAYMENT_STATUS", "50001131", message)))
                    case .tooMuch(let message): return (400, Self.body(error(400, "INVALID_REFUND_AMOUNT", "50001130", message)))
                    case .declined(let code, let description, let refundId):
                        var rejected = error(402, "REFUND_REJECTED", code, description)
                        rejected["refundResult"] = [
                            "id": refundId, "status": "REJECTED", "statusOutput": ["statusCategory": "UNSUCCESSFUL", "statusCode": 83],
                        ]
                        return (402, Self.body(rejected))
                    }
                },
                notFound: Self.reply(
                    404, ["errorId": UUID().uuidString, "errors": [["id": "UNKNOWN_PAYMENT_ID", "message": "no such payment"]]]),
                fault: { status in
                    status == 409 ? Self.worldlineInProgress : Self.body(error(status, "SERVER_ERROR", "9999", "Injected fault \(status)"))
                },
                replayHeaders: [("X-GCS-Idempotence-Request-Timestamp", String(Int(Date().timeIntervalSince1970 * 1000)))]))
    }
}
