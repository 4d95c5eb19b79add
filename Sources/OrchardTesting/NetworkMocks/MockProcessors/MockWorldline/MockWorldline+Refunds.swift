import Foundation

/// Worldline Direct refunds; the bookkeeping is ``MockProcessors/refund(_:_:)``'s.
extension MockWorldline {
    /// `POST /v2/{merchantId}/payments/{paymentId}/refund`, signed, with an idempotence key: a
    /// refusal of the refund itself is 402 with `refundResult` `REJECTED`; one of the request
    /// (not settled, too much) is 400 with `errors`, whose IDs are this mock's own.
    func worldlineRefund(_ request: MockProcessorRequest, prefix: String, mock: MockProcessors) -> Reply {
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
        return mock.refund(
            RefundAsk(
                processor: name, chargeId: String(rest[0]), reference: key, amount: amount,
                currency: money["currencyCode"] as? String, merchantReference: merchantReference),
            RefundAnswers(
                refundId: { chargeId, serial in "\(chargeId.split(separator: "_").first ?? "")_\(serial)" },
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
