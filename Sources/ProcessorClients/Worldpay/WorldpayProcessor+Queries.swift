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
        if let listed = try await queriedPayment(payment.reference) {
            switch listed["lastEvent"] as? String {
            case "authorizationSucceeded", "settlementRequested", "settlementRequestSubmitted":
                var links = Self.actions(listed, ["settle", "cancel"], baseURL: settings.connection.baseURL)
                if links.isEmpty, let id = Self.paymentId(listed["paymentId"]) {
                    links = Self.actions(try await paymentDetail(id), ["settle", "cancel"], baseURL: settings.connection.baseURL)
                }
                if links.isEmpty, let events = try? await paymentEvents(payment.reference) {
                    links = Self.actions(events, ["settle", "cancel"], baseURL: settings.connection.baseURL)
                }
                return .found(AuthorizationOutcome(status: .authorized, processorReference: payment.reference, links: links))
            case "authorizationRefused", "authorizationFailed":
                return .found(AuthorizationOutcome(status: .refused, code: listed["lastEvent"] as? String))
            default:
                return .pending
            }
        }
        // Not (yet) in Payment Queries: the recovery query.
        guard let events = try await paymentEvents(payment.reference) else { return .notFound(lag: Self.paymentEventsLag) }
        switch events["lastEvent"] as? String {
        case "Authorized", "Sent for Settlement", "Settled":
            return .found(
                AuthorizationOutcome(
                    status: .authorized, processorReference: payment.reference,
                    links: Self.actions(events, ["settle", "cancel"], baseURL: settings.connection.baseURL)))
        case "Refused", "Error":
            return .found(AuthorizationOutcome(status: .refused, code: events["lastEvent"] as? String))
        default:
            return .pending
        }
    }

    public func lookupRefund(_ refund: RefundRecord, of payment: PaymentRecord) async throws -> RefundLookup {
        guard let listed = try await queriedPayment(payment.reference), let id = Self.paymentId(listed["paymentId"]) else {
            throw ProcessorNoAnswer("Payment Queries does not list payment \(payment.reference): its refunds cannot be looked up")
        }
        let detail = try await paymentDetail(id)
        guard let events = detail["events"] as? [[String: Any]] else {
            throw ProcessorNoAnswer("Payment Queries answered payment \(id) without its events")
        }
        guard let last = events.last(where: { $0["reference"] as? String == refund.reference }) else {
            return .notFound(lag: Self.paymentQueriesLag)
        }
        let name = last["eventName"] as? String
        switch name {
        case "refundRequested", "refundRequestSubmitted":
            return .found(RefundOutcome(status: .refunded, processorReference: Self.string(last["commandId"]), code: name))
        case "refundFailed":
            return .found(RefundOutcome(status: .refused, code: name))
        default:
            return .pending
        }
    }

    /// The Payment Queries entry for the reference; nil when it lists none.
    func queriedPayment(_ reference: String) async throws -> [String: Any]? {
        let answer = try await client.send(
            "GET", url: settings.connection.baseURL + "/paymentQueries/payments?transactionReference=\(Self.query(reference))",
            headers: queryHeaders, body: nil)
        guard answer.status == 200, let embedded = answer.json["_embedded"] as? [String: Any],
            let payments = embedded["payments"] as? [[String: Any]]
        else {
            throw ProcessorNoAnswer("Payment Queries answered HTTP \(answer.status) without a list of payments")
        }
        let matching = payments.filter { $0["transactionReference"] as? String == reference }
        return matching.first
    }

    /// `GET /paymentQueries/payments/{paymentId}`: the payment with its events and action links.
    func paymentDetail(_ id: String) async throws -> [String: Any] {
        let answer = try await client.send(
            "GET", url: settings.connection.baseURL + "/paymentQueries/payments/\(id)", headers: queryHeaders, body: nil)
        guard answer.status == 200, !answer.json.isEmpty else {
            throw ProcessorNoAnswer("Payment Queries answered payment \(id) with HTTP \(answer.status)")
        }
        return answer.json
    }

    /// The recovery query's answer; nil for Worldpay's 404 (no payment with that reference).
    func paymentEvents(_ reference: String) async throws -> [String: Any]? {
        let answer = try await client.send(
            "GET",
            url: settings.connection.baseURL
                + "/payments/events?transactionRef=\(Self.query(reference))&entity=\(Self.query(settings.entity))",
            headers: headers, body: nil)
        switch answer.status {
        case 200 where answer.json["lastEvent"] is String: return answer.json
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
    static func paymentId(_ value: Any?) -> String? {
        guard let id = value as? String, (1...64).contains(id.utf8.count),
            id.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "_" || $0 == "-") })
        else { return nil }
        return id
    }
}
