import CurlClient
import Foundation
import OrchardCore

/// What Worldpay's records say of an unknown payment or refund, asked before anything is sent
/// again: Worldpay promises no de-duplication of a re-sent `transactionReference` or refund
/// `reference`, so a re-send is made only for what it still does not know once its records'
/// documented lag has passed.
///
/// - Payment Queries API (`GET /paymentQueries/payments?transactionReference=…`, `Accept:
///   application/vnd.worldpay.payment-queries-v1.hal+json`): the payments with that reference
///   under `_embedded.payments`, each with `paymentId` and `lastEvent` (`authorizationRequested`,
///   `authorizationSucceeded`, `authorizationRefused`, `authorizationFailed`, `settlementRequested`…);
///   `GET /paymentQueries/payments/{paymentId}` adds its `events` and next action links. Worldpay:
///   "a delay of up to 60 seconds between the initiation of a payment and data becoming available".
/// - Payment events, the recovery query (`GET /payments/events?transactionRef=…&entity=…`,
///   payments-v7 media type): the `lastEvent` (`Authorized`, `Refused`, `Sent for Settlement`,
///   `Settled`, `Error`, `Expired`…) and action links, or 404; "it can take up to 15 minutes for a
///   payment event to update". Worldpay says to use it when a payment cannot be found through
///   Payment Queries, so it is asked only then.
///
/// A payment neither lists is not found with the longer lag, 15 minutes. A refund is looked up
/// among its payment's Payment Queries events (60 s). Not confirmed in Worldpay's documentation
/// (confirm in the try environment): that an unknown reference gets an empty `payments` list,
/// the action-link relation names in Payment Queries answers (read as `cardPayments:*` or
/// `payments:*`), and that each refund event names the refund's `reference`.
extension WorldpayProcessor {
    /// The Payment Queries API's media type, its version picked by `Accept`.
    public static let paymentQueriesMediaType = "application/vnd.worldpay.payment-queries-v1.hal+json"
    /// How far behind a send each query's records may be, as Worldpay documents them.
    static let paymentQueriesLag: TimeInterval = 60
    static let paymentEventsLag: TimeInterval = 15 * 60

    public func lookup(_ payment: PaymentRecord) async throws -> PaymentLookup {
        let baseURL = settings.connection.baseURL
        if let listed = try await queriedPayment(payment.reference) {
            switch listed["lastEvent"]?.string {
            case "authorizationSucceeded", "settlementRequested", "settlementRequestSubmitted":
                var links = Self.actions(listed, ["settle", "partialSettle", "cancel"], baseURL: baseURL)
                if links.isEmpty, let id = Self.paymentId(listed["paymentId"]) {
                    links = Self.actions(try await paymentDetail(id), ["settle", "partialSettle", "cancel"], baseURL: baseURL)
                }
                if links.isEmpty, let events = try? await paymentEvents(payment.reference) {
                    links = Self.actions(events, ["settle", "partialSettle", "cancel"], baseURL: baseURL)
                }
                return .found(AuthorizationOutcome(status: .authorized, processorReference: payment.reference, links: links))
            case "authorizationRefused", "authorizationFailed":
                return .found(AuthorizationOutcome(status: .refused, code: listed["lastEvent"]?.string))
            default:
                return .pending
            }
        }
        // Not (yet) in Payment Queries: the recovery query.
        guard let events = try await paymentEvents(payment.reference) else { return .notFound(lag: Self.paymentEventsLag) }
        return Self.eventsLookup(events, reference: payment.reference, baseURL: baseURL)
    }

    /// What the recovery query's answer (`status`, `body`) says of payment `reference`: a pure
    /// function of the answer, for the tests and the fuzzer. Throws ``ProcessorNoAnswer`` for an
    /// answer that is neither a readable 200 nor a 404.
    public static func paymentEventsLookup(status: Int, body: [UInt8], reference: String, baseURL: String) throws -> PaymentLookup {
        guard let events = try paymentEvents(ProcessorHTTP.Answer(status: status, body: body)) else {
            return .notFound(lag: paymentEventsLag)
        }
        return eventsLookup(events, reference: reference, baseURL: baseURL)
    }

    /// The recovery query's `lastEvent`: authorized, refused, or not final.
    static func eventsLookup(_ events: JSONValue, reference: String, baseURL: String) -> PaymentLookup {
        switch events["lastEvent"]?.string {
        case "Authorized", "Sent for Settlement", "Settled":
            return .found(
                AuthorizationOutcome(
                    status: .authorized, processorReference: reference,
                    links: actions(events, ["settle", "partialSettle", "cancel"], baseURL: baseURL)))
        case "Refused", "Error":
            return .found(AuthorizationOutcome(status: .refused, code: events["lastEvent"]?.string))
        default:
            return .pending
        }
    }

    public func lookupRefund(_ refund: RefundRecord, of payment: PaymentRecord) async throws -> RefundLookup {
        guard let listed = try await queriedPayment(payment.reference), let id = Self.paymentId(listed["paymentId"]) else {
            throw ProcessorNoAnswer("Payment Queries does not list payment \(payment.reference): its refunds cannot be looked up")
        }
        return try Self.refundLookup(detail: try await paymentDetail(id), paymentId: id, refundReference: refund.reference)
    }

    /// What a payment's Payment Queries detail says of its refund `refundReference`: the last
    /// event naming it. Throws ``ProcessorNoAnswer`` for a detail without its list of events.
    static func refundLookup(detail: JSONValue, paymentId id: String, refundReference: String) throws -> RefundLookup {
        guard let events = detail["events"]?.objects else {
            throw ProcessorNoAnswer("Payment Queries answered payment \(id) without its events")
        }
        guard let last = events.last(where: { $0["reference"]?.string == refundReference }) else {
            return .notFound(lag: paymentQueriesLag)
        }
        let name = last["eventName"]?.string
        switch name {
        case "refundRequested", "refundRequestSubmitted":
            return .found(RefundOutcome(status: .refunded, processorReference: last["commandId"]?.code, code: name))
        case "refundFailed":
            return .found(RefundOutcome(status: .refused, code: name))
        default:
            return .pending
        }
    }

    /// What a payment's Payment Queries detail answer (`status`, `body`) says of its refund: a
    /// pure function of the answer, for the tests and the fuzzer.
    public static func refundLookup(status: Int, body: [UInt8], paymentId id: String, refundReference: String) throws -> RefundLookup {
        try refundLookup(
            detail: paymentDetail(ProcessorHTTP.Answer(status: status, body: body), id: id), paymentId: id, refundReference: refundReference
        )
    }

    /// The Payment Queries entry for the reference; nil when it lists none.
    func queriedPayment(_ reference: String) async throws -> JSONValue? {
        let answer = try await client.send(
            "GET", url: settings.connection.baseURL + "/paymentQueries/payments?transactionReference=\(Self.query(reference))",
            headers: queryHeaders, body: nil)
        return try Self.listedPayment(answer, reference: reference)
    }

    /// The entry for `reference` in a Payment Queries list answer; nil when it lists none.
    static func listedPayment(_ answer: ProcessorHTTP.Answer, reference: String) throws -> JSONValue? {
        guard answer.status == 200, let payments = answer.json["_embedded"]?["payments"]?.objects else {
            throw ProcessorNoAnswer("Payment Queries answered HTTP \(answer.status) without a list of payments")
        }
        return payments.first { $0["transactionReference"]?.string == reference }
    }

    /// `GET /paymentQueries/payments/{paymentId}`: the payment with its events and action links.
    func paymentDetail(_ id: String) async throws -> JSONValue {
        let answer = try await client.send(
            "GET", url: settings.connection.baseURL + "/paymentQueries/payments/\(id)", headers: queryHeaders, body: nil)
        return try Self.paymentDetail(answer, id: id)
    }

    static func paymentDetail(_ answer: ProcessorHTTP.Answer, id: String) throws -> JSONValue {
        guard answer.status == 200, !answer.isEmpty else {
            throw ProcessorNoAnswer("Payment Queries answered payment \(id) with HTTP \(answer.status)")
        }
        return answer.json
    }

    /// The recovery query's answer; nil for Worldpay's 404 (no payment with that reference).
    func paymentEvents(_ reference: String) async throws -> JSONValue? {
        let answer = try await client.send(
            "GET",
            url: settings.connection.baseURL
                + "/payments/events?transactionRef=\(Self.query(reference))&entity=\(Self.query(settings.entity))",
            headers: headers, body: nil)
        return try Self.paymentEvents(answer)
    }

    static func paymentEvents(_ answer: ProcessorHTTP.Answer) throws -> JSONValue? {
        switch answer.status {
        case 200 where answer.json["lastEvent"]?.string != nil: return answer.json
        case 404: return nil
        default: throw ProcessorNoAnswer("Worldpay answered the payment events query with HTTP \(answer.status)")
        }
    }

    var queryHeaders: [(name: String, value: String)] {
        let credentials = Data("\(settings.username.value):\(settings.password.value)".utf8).base64EncodedString()
        return [(name: "Authorization", value: "Basic \(credentials)"), (name: "Accept", value: Self.paymentQueriesMediaType)]
    }

    /// A query parameter's value, percent-encoded.
    static func query(_ value: String) -> String {
        value.addingPercentEncoding(withAllowedCharacters: unreserved) ?? ""
    }

    /// RFC 3986's unreserved characters: everything else is percent-encoded.
    static let unreserved = CharacterSet(charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")

    /// A Payment Queries payment ID that is safe in a path (Worldpay's: letters, digits, `_`, `-`).
    static func paymentId(_ value: JSONValue?) -> String? {
        guard let id = value?.string, (1...64).contains(id.utf8.count),
            id.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "_" || $0 == "-") })
        else { return nil }
        return id
    }
}
