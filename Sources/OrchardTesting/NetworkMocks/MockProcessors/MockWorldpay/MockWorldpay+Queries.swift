import ApplePay
import Foundation
import Synchronization

/// Worldpay's Payment Queries API and payment events recovery query, lag included: a payment or
/// refund shows in their answers only once its lag has passed on ``MockProcessors/clock``, which
/// tests move instead of sleeping.
extension MockProcessors {
    /// How long after it was taken (or refunded) Worldpay's Payment Queries API shows a payment
    /// (or refund); Worldpay documents up to 60 s. 0 unless a test sets it.
    public var paymentQueriesLag: TimeInterval {
        get { processor(MockWorldpay.self)?.lags.withLock { $0.queries } ?? 0 }
        set { processor(MockWorldpay.self)?.lags.withLock { $0.queries = newValue } }
    }

    /// The same for Worldpay's payment events query; Worldpay documents up to 15 minutes.
    public var paymentEventsLag: TimeInterval {
        get { processor(MockWorldpay.self)?.lags.withLock { $0.events } ?? 0 }
        set { processor(MockWorldpay.self)?.lags.withLock { $0.events = newValue } }
    }
}

extension MockWorldpay {
    // MARK: Worldpay Payment Queries

    /// `GET /paymentQueries/payments?transactionReference=…` (the payments with that reference,
    /// summarised) and `GET /paymentQueries/payments/{paymentId}` (one, with its events and next
    /// actions; an empty body for an ID it does not know). Basic credentials and `Accept:
    /// application/vnd.worldpay.payment-queries-v1.hal+json` are required.
    func worldpayPaymentQuery(_ request: MockProcessorRequest, mock: MockProcessors) -> Reply {
        if let denied = worldpayAuthorized(request) { return denied }
        let mediaType = "application/vnd.worldpay.payment-queries-v1.hal+json"
        guard request.header("Accept") == mediaType else {
            return worldpayError(406, "headerHasInvalidValue", "Accept must be \(mediaType)")
        }
        let lag = lags.withLock { $0.queries }
        return mock.state.withLock { state in
            let now = state.clock.now
            let shown = state.charges.filter { $0.processor == name && $0.takenAt.addingTimeInterval(lag) <= now }
            if request.path == "/paymentQueries/payments" {
                guard let reference = request.query["transactionReference"], !reference.isEmpty else {
                    return worldpayError(400, "fieldIsMissing", "transactionReference (or startDate and endDate) is required")
                }
                let payments = shown.filter { $0.reference == reference }.map { worldpaySummary($0, state: state) }
                return Self.reply(
                    200,
                    [
                        "_links": ["self": ["href": "/paymentQueries/payments?transactionReference=\(reference)"]],
                        "_embedded": ["payments": payments],
                    ])
            }
            let id = String(request.path.dropFirst("/paymentQueries/payments/".count))
            guard let charge = shown.first(where: { Self.worldpayPaymentId($0) == id }) else { return Self.reply(200, [:]) }
            var detail = worldpaySummary(charge, state: state)
            detail["events"] = worldpayHistory(of: charge, state: state, now: now, lag: lag)
            if charge.state == .authorized {
                detail["_links"] = [
                    "self": ["href": "/paymentQueries/payments/\(id)"],
                    "cardPayments:settle": ["href": "\(mock.baseURL)/payments/settlements/full/\(charge.id)"],
                    "cardPayments:partialSettle": ["href": "\(mock.baseURL)/payments/settlements/partials/\(charge.id)"],
                    "cardPayments:cancel": ["href": "\(mock.baseURL)/payments/authorizations/cancellations/\(charge.id)"],
                ]
            }
            return Self.reply(200, detail)
        }
    }

    /// Worldpay's payment ID for a charge: letters, digits, `_` and `-`.
    static func worldpayPaymentId(_ charge: MockCharge) -> String {
        "pay" + charge.id.filter { $0 != "=" }
    }

    func worldpaySummary(_ charge: MockCharge, state: State) -> [String: Any] {
        let id = Self.worldpayPaymentId(charge)
        return [
            "paymentId": id, "timestamp": charge.takenAt.formatted(.iso8601), "transactionReference": charge.reference,
            "entity": account.entity, "lastEvent": worldpayLastEvent(charge, state: state),
            "value": ["amount": charge.amount, "currency": charge.currency],
            "_links": ["self": ["href": "/paymentQueries/payments/\(id)"]],
        ]
    }

    /// The payment's last event, as Payment Queries names it; `authorizationRequested` while a
    /// slow authorization is still running.
    func worldpayLastEvent(_ charge: MockCharge, state: State) -> String {
        if state.inProgress[name + ":" + charge.reference].map({ $0 > .now }) ?? false { return "authorizationRequested" }
        switch charge.state {
        case .authorized: return "authorizationSucceeded"
        case .refused: return "authorizationRefused"
        case .settled: return "settlementRequested"
        case .cancelled: return "cancellationRequested"
        case .pending: return "authorizationRequested"
        }
    }

    /// The payment's events: its authorization, settlement and each refund shown so far (a
    /// refund's event names its `reference`, `value` and `commandId`).
    func worldpayHistory(of charge: MockCharge, state: State, now: Date, lag: TimeInterval) -> [[String: Any]] {
        var events: [[String: Any]] = [["eventName": "authorizationRequested", "timestamp": charge.takenAt.formatted(.iso8601)]]
        let outcome = worldpayLastEvent(charge, state: state)
        if outcome != "authorizationRequested" {
            let authorization = charge.state == .refused ? "authorizationRefused" : "authorizationSucceeded"
            events.append(["eventName": authorization, "timestamp": charge.takenAt.formatted(.iso8601)])
        }
        if let settled = charge.settledAt {
            events.append(["eventName": "settlementRequested", "timestamp": settled.formatted(.iso8601)])
        }
        let refunds = state.refunds.filter {
            $0.processor == name && $0.paymentReference == charge.reference
                && $0.madeAt.addingTimeInterval(lag) <= now
        }
        for refund in refunds {
            var event: [String: Any] = [
                "eventName": "refundRequested", "timestamp": refund.madeAt.formatted(.iso8601), "commandId": refund.id,
                "value": ["amount": refund.amount, "currency": refund.currency],
            ]
            event["reference"] = refund.reference
            events.append(event)
        }
        return events
    }

    // MARK: Worldpay payment events (recovery)

    /// `GET /payments/events?transactionRef=…&entity=…`, with the v7 media type: the last event
    /// and next actions of the payment with that reference once the events' lag has passed; 404 otherwise.
    func worldpayEvents(_ request: MockProcessorRequest, mock: MockProcessors) -> Reply {
        if let denied = worldpayAuthorized(request) { return denied }
        let mediaType = "application/vnd.worldpay.payments-v7+json"
        guard request.header("Accept") == mediaType else {
            return worldpayError(406, "headerHasInvalidValue", "Accept must be \(mediaType)")
        }
        guard let reference = request.query["transactionRef"], !reference.isEmpty, request.query["entity"] != nil else {
            return Self.worldpaySchemaError([("fieldIsMissing", "transactionRef and entity are required")])
        }
        let lag = lags.withLock { $0.events }
        return mock.state.withLock { state in
            let now = state.clock.now
            guard request.query["entity"] == account.entity,
                let charge = state.charges.last(where: {
                    $0.processor == name && $0.reference == reference && $0.takenAt.addingTimeInterval(lag) <= now
                })
            else { return worldpayError(404, "entityNotFound", "no payment with this transactionRef for this entity") }
            let last: String
            switch worldpayLastEvent(charge, state: state) {
            case "authorizationSucceeded": last = "Authorized"
            case "authorizationRefused": last = "Refused"
            case "settlementRequested": last = "Sent for Settlement"
            case "cancellationRequested": last = "Send for Cancellation"
            // Its v7 list of last events has none for an authorization still running.
            default: return worldpayError(404, "entityNotFound", "no payment with this transactionRef for this entity")
            }
            var links: [String: Any] = [:]
            if charge.state == .authorized {
                links["payments:settle"] = ["href": "\(mock.baseURL)/payments/settlements/full/\(charge.id)"]
                links["payments:partialSettle"] = ["href": "\(mock.baseURL)/payments/settlements/partials/\(charge.id)"]
                links["payments:cancel"] = ["href": "\(mock.baseURL)/payments/authorizations/cancellations/\(charge.id)"]
            }
            return Self.reply(200, ["lastEvent": last, "_links": links])
        }
    }
}
