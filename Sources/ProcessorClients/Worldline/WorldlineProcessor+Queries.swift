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
        guard answer.status == 200 else {
            throw ProcessorNoAnswer("Worldline answered GetPayment \(id) with HTTP \(answer.status)")
        }
        let echoed =
            ((answer.json["paymentOutput"] as? [String: Any])?["references"] as? [String: Any])?["merchantReference"] as? String
        if let echoed, echoed != payment.reference {
            throw ProcessorNoAnswer("Worldline's payment \(id) is reference \(echoed), not \(payment.reference)")
        }
        let status = answer.json["status"] as? String
        switch WorldlineStatus.payment(answer.json) {
        case .succeeded:
            return .found(authorized(id: id, status: status))
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
        guard answer.status == 200, let refunds = answer.json["refunds"] as? [[String: Any]] else {
            throw ProcessorNoAnswer("Worldline answered GetRefunds of \(id) with HTTP \(answer.status)")
        }
        let found = refunds.first { entry in
            let reference = ((entry["refundOutput"] as? [String: Any])?["references"] as? [String: Any])?["merchantReference"] as? String
            return reference == refund.reference
                || (refund.processorReference != nil && entry["id"] as? String == refund.processorReference)
        }
        guard let found else { return .deduplicated(window: Self.idempotenceWindow) }
        let status = found["status"] as? String
        switch WorldlineStatus.refund(found) {
        case .succeeded:
            return .found(RefundOutcome(status: .refunded, processorReference: found["id"] as? String, code: status))
        case .refused:
            return .found(RefundOutcome(status: .refused, processorReference: found["id"] as? String, code: status))
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
