import CurlClient
import Foundation
import OrchardCore

/// What Worldline's records say of an unknown payment or refund, asked before anything is sent
/// again. Worldline knows a payment by the ID it answered with: GetPayment
/// (`GET /v2/{merchantId}/payments/{paymentId}`) reads its status, and GetRefunds
/// (`GET /v2/{merchantId}/payments/{paymentId}/refunds`) its refunds, each with its
/// `refundOutput.references.merchantReference`. A payment whose answer was lost before any ID
/// came cannot be looked up (Direct has no search by merchant reference), but CreatePayment and
/// RefundPayment are idempotent on `X-GCS-Idempotence-Key`: Worldline documents that a request
/// repeated with a key gets the first one's outcome, and keeps keys "at least 24 hours". So such
/// a reference may be re-sent within ``idempotenceWindow`` of its first send, and not after.
///
/// Confirmed from Worldline's SDKs (Online-Payments): both routes, `PaymentResponse` (`id`,
/// `status`, `statusOutput`, `paymentOutput.references`) and `RefundsResponse.refunds`. Not
/// confirmed: that GetPayment's `statusOutput` carries `isAuthorized` for a mobile (302)
/// payment as CreatePayment's does.
extension WorldlineProcessor {
    /// How long after a reference's first send a re-send is still answered from it: Worldline's
    /// "at least 24 hours", less an hour for clocks and calls in flight.
    static let idempotenceWindow: TimeInterval = 23 * 3600

    /// GetPayment for a payment with a Worldline ID; de-duplicated re-sends for one without.
    public func lookup(_ payment: PaymentRecord) async throws -> PaymentLookup {
        guard let id = Self.paymentId(payment) else { return .deduplicated(window: Self.idempotenceWindow) }
        let answer = try await get("\(paymentsPath)/\(id)")
        return try Self.paymentLookup(
            answer, id: id, reference: payment.reference, paymentsURL: settings.connection.baseURL + paymentsPath)
    }

    /// What a GetPayment answer (`status`, `body`) says of payment `id`, sent as `reference`: a
    /// pure function of the answer, for the tests and the fuzzer. Throws ``ProcessorNoAnswer`` for
    /// anything but a 200 about that reference.
    public static func paymentLookup(status: Int, body: [UInt8], id: String, reference: String, paymentsURL: String) throws
        -> PaymentLookup
    {
        try paymentLookup(ProcessorHTTP.Answer(status: status, body: body), id: id, reference: reference, paymentsURL: paymentsURL)
    }

    static func paymentLookup(_ answer: ProcessorHTTP.Answer, id: String, reference: String, paymentsURL: String) throws
        -> PaymentLookup
    {
        guard answer.status == 200 else {
            throw ProcessorNoAnswer("Worldline answered GetPayment \(id) with HTTP \(answer.status)")
        }
        if let echoed = answer.json["paymentOutput"]?["references"]?["merchantReference"]?.string, echoed != reference {
            throw ProcessorNoAnswer("Worldline's payment \(id) is reference \(echoed), not \(reference)")
        }
        let status = answer.json["status"]?.string
        switch WorldlineStatus.payment(answer.json) {
        case .succeeded:
            return .found(authorized(id: id, status: status, paymentsURL: paymentsURL))
        case .refused:
            return .found(AuthorizationOutcome(status: .refused, processorReference: id, code: status))
        case .pending, .unreadable:
            return .pending
        }
    }

    /// The refund in GetRefunds whose ID or merchant reference is the refund's; a refund it does
    /// not list may be re-sent within the idempotence window.
    public func lookupRefund(_ refund: RefundRecord, of payment: PaymentRecord) async throws -> RefundLookup {
        guard let id = Self.paymentId(payment) else { return .deduplicated(window: Self.idempotenceWindow) }
        let answer = try await get("\(paymentsPath)/\(id)/refunds")
        return try Self.refundLookup(answer, id: id, reference: refund.reference, processorReference: refund.processorReference)
    }

    /// What a GetRefunds answer (`status`, `body`) of payment `id` says of the refund sent as
    /// `reference` (with Worldline's ID `processorReference`, when it answered one): a pure
    /// function of the answer, for the tests and the fuzzer.
    public static func refundLookup(status: Int, body: [UInt8], id: String, reference: String, processorReference: String?) throws
        -> RefundLookup
    {
        try refundLookup(
            ProcessorHTTP.Answer(status: status, body: body), id: id, reference: reference, processorReference: processorReference)
    }

    static func refundLookup(_ answer: ProcessorHTTP.Answer, id: String, reference: String, processorReference: String?) throws
        -> RefundLookup
    {
        guard answer.status == 200, let refunds = answer.json["refunds"]?.objects else {
            throw ProcessorNoAnswer("Worldline answered GetRefunds of \(id) with HTTP \(answer.status)")
        }
        let found = refunds.first { entry in
            entry["refundOutput"]?["references"]?["merchantReference"]?.string == reference
                || (processorReference != nil && entry["id"]?.string == processorReference)
        }
        guard let found else { return .deduplicated(window: idempotenceWindow) }
        let status = found["status"]?.string
        switch WorldlineStatus.refund(found) {
        case .succeeded:
            return .found(RefundOutcome(status: .refunded, processorReference: found["id"]?.string, code: status))
        case .refused:
            return .found(RefundOutcome(status: .refused, processorReference: found["id"]?.string, code: status))
        case .pending, .unreadable:
            return .pending
        }
    }

    /// A signed `GET` (no body, so no Content-Type in the signature).
    func get(_ path: String) async throws -> ProcessorHTTP.Answer {
        try await client.send(
            "GET", url: settings.connection.baseURL + path,
            headers: signedHeaders(method: "GET", path: path, idempotenceKey: nil, hasBody: false), body: nil)
    }
}
