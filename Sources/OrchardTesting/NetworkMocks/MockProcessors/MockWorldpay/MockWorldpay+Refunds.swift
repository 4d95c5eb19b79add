import Foundation

/// Worldpay Access refunds, by the links a settlement's answer hands out; the bookkeeping is
/// ``MockProcessors/refund(_:_:)``'s.
extension MockWorldpay {
    /// `POST` to the settle answer's `payments:refund` (no body needed; an optional `reference`)
    /// or `payments:partialRefund` link (`value` and `reference` required). The refusal error
    /// names are this mock's own: Worldpay documents the 4xx shape, not refunds' names.
    func worldpayRefund(_ request: MockProcessorRequest, mock: MockProcessors) -> Reply {
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
            processor: name, chargeId: String(parts[4]), reference: reference, amount: partial ? Self.integer(value?["amount"]) : nil,
            currency: partial ? value?["currency"] as? String : nil)
        let events = "\(mock.baseURL)/payments/events/\(parts[4])"
        return mock.refund(
            ask,
            RefundAnswers(
                refundId: { chargeId, serial in "cmd\(serial)-\(chargeId)" },
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

}
