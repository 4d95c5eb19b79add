import ApplePay
import Foundation
import Synchronization

/// What the mock processors answer when asked about a payment or refund: Worldpay's Payment
/// Queries API and payment events recovery query, lag included, and Worldline's GetPayment and
/// GetRefunds (``worldlineQueryRoute(_:)``). A payment or refund shows in Worldpay's answers only
/// once its lag has passed on ``clock``, which tests move instead of sleeping.
extension MockProcessors {
    /// The mock's "now" for the queries' lag; the system clock unless a test sets its own.
    public var clock: TimeSource {
        get { state.withLock { $0.clock } }
        set { state.withLock { $0.clock = newValue } }
    }

    /// How long after it was taken (or refunded) Worldpay's Payment Queries API shows a payment
    /// (or refund); Worldpay documents up to 60 s. 0 unless a test sets it.
    public var paymentQueriesLag: TimeInterval {
        get { state.withLock { $0.paymentQueriesLag } }
        set { state.withLock { $0.paymentQueriesLag = newValue } }
    }

    /// The same for Worldpay's payment events query; Worldpay documents up to 15 minutes.
    public var paymentEventsLag: TimeInterval {
        get { state.withLock { $0.paymentEventsLag } }
        set { state.withLock { $0.paymentEventsLag = newValue } }
    }

    /// The query routes of both processors, or nil for another request.
    func queryRoute(_ request: MockProcessorRequest) -> Reply? {
        guard request.method == "GET" else { return nil }
        if let worldline = worldlineQueryRoute(request) { return worldline }
        if request.path == "/paymentQueries/payments" || request.path.hasPrefix("/paymentQueries/payments/") {
            return worldpayPaymentQuery(request)
        }
        if request.path == "/payments/events" { return worldpayEvents(request) }
        return nil
    }

    // MARK: Worldpay Payment Queries

    /// `GET /paymentQueries/payments?transactionReference=…` (the payments with that reference,
    /// summarised) and `GET /paymentQueries/payments/{paymentId}` (one, with its events and next
    /// actions; an empty body for an ID it does not know). Basic credentials and `Accept:
    /// application/vnd.worldpay.payment-queries-v1.hal+json` are required.
    func worldpayPaymentQuery(_ request: MockProcessorRequest) -> Reply {
        if let denied = worldpayAuthorized(request) { return denied }
        let mediaType = "application/vnd.worldpay.payment-queries-v1.hal+json"
        guard request.header("Accept") == mediaType else {
            return worldpayError(406, "headerHasInvalidValue", "Accept must be \(mediaType)")
        }
        return state.withLock { state in
            let now = state.clock.now
            let shown = state.charges.filter { $0.processor == "worldpay" && $0.takenAt.addingTimeInterval(state.paymentQueriesLag) <= now }
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
            detail["events"] = worldpayHistory(of: charge, state: state, now: now)
            if charge.state == .authorized {
                detail["_links"] = [
                    "self": ["href": "/paymentQueries/payments/\(id)"],
                    "cardPayments:settle": ["href": "\(baseURL)/payments/settlements/full/\(charge.id)"],
                    "cardPayments:cancel": ["href": "\(baseURL)/payments/authorizations/cancellations/\(charge.id)"],
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
            "entity": worldpay.entity, "lastEvent": worldpayLastEvent(charge, state: state),
            "value": ["amount": charge.amount, "currency": charge.currency],
            "_links": ["self": ["href": "/paymentQueries/payments/\(id)"]],
        ]
    }

    /// The payment's last event, as Payment Queries names it; `authorizationRequested` while a
    /// slow authorization is still running.
    func worldpayLastEvent(_ charge: MockCharge, state: State) -> String {
        if state.inProgress["worldpay:" + charge.reference].map({ $0 > .now }) ?? false { return "authorizationRequested" }
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
    func worldpayHistory(of charge: MockCharge, state: State, now: Date) -> [[String: Any]] {
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
            $0.processor == "worldpay" && $0.paymentReference == charge.reference
                && $0.madeAt.addingTimeInterval(state.paymentQueriesLag) <= now
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
    func worldpayEvents(_ request: MockProcessorRequest) -> Reply {
        if let denied = worldpayAuthorized(request) { return denied }
        let mediaType = "application/vnd.worldpay.payments-v7+json"
        guard request.header("Accept") == mediaType else {
            return worldpayError(406, "headerHasInvalidValue", "Accept must be \(mediaType)")
        }
        guard let reference = request.query["transactionRef"], !reference.isEmpty, request.query["entity"] != nil else {
            return Self.worldpaySchemaError([("fieldIsMissing", "transactionRef and entity are required")])
        }
        return state.withLock { state in
            let now = state.clock.now
            guard request.query["entity"] == worldpay.entity,
                let charge = state.charges.last(where: {
                    $0.processor == "worldpay" && $0.reference == reference && $0.takenAt.addingTimeInterval(state.paymentEventsLag) <= now
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
                links["payments:settle"] = ["href": "\(baseURL)/payments/settlements/full/\(charge.id)"]
                links["payments:cancel"] = ["href": "\(baseURL)/payments/authorizations/cancellations/\(charge.id)"]
            }
            return Self.reply(200, ["lastEvent": last, "_links": links])
        }
    }
}
