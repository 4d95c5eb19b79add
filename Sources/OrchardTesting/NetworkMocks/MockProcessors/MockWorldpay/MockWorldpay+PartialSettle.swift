import ApplePay
import Foundation
import Synchronization

/// Worldpay Access partial settlements, by the authorization's `partialSettle` link.
extension MockWorldpay {
    /// `POST /payments/settlements/partials/{linkData}` with `value` (`amount`, `currency`) and
    /// `reference`, both required (Worldpay's "Settle for partial amount"): 202 with the refund
    /// links, another `partialSettle` and a `cancel`, which here releases the rest. What it took
    /// is kept on the charge (``MockCharge/capturedAmount``, ``MockCharge/captureReference``).
    func worldpayPartialSettle(_ request: MockProcessorRequest, mock: MockProcessors) -> Reply {
        if let denied = worldpayAuthorized(request) { return denied }
        let key = String(request.path.split(separator: "/").last ?? "")
        let body = try? JSONSerialization.jsonObject(with: Data(request.body)) as? [String: Any]
        let value = body?["value"] as? [String: Any]
        let reference = body?["reference"] as? String
        guard let amount = Self.integer(value?["amount"]), amount >= 1, Self.isCurrency(value?["currency"]),
            let reference, (1...64).contains(reference.count)
        else {
            return Self.reply(
                400,
                ["errorName": "bodyDoesNotMatchSchema", "message": "value.amount, value.currency and reference (1–64) are required"])
        }
        return mock.state.withLock { state in
            guard let index = state.charges.firstIndex(where: { $0.processor == name && $0.id == key }) else {
                return Self.reply(404, ["errorName": "urlNotFound", "message": "no such payment"])
            }
            let charge = state.charges[index]
            guard charge.state == .authorized else {
                return Self.reply(409, ["errorName": "entityIsInWrongState", "message": "the payment is \(charge.state.rawValue)"])
            }
            guard value?["currency"] as? String == charge.currency, amount <= charge.amount else {
                return Self.reply(400, ["errorName": "amountIsTooHigh", "message": "at most \(charge.amount) \(charge.currency)"])
            }
            state.charges[index].state = .settled
            state.charges[index].settledAt = state.clock.now
            state.charges[index].capturedAmount = amount
            state.charges[index].captureReference = reference
            let refunds = "\(mock.baseURL)/payments/settlements/refunds"
            return Self.reply(
                202,
                [
                    "_links": [
                        "payments:refund": ["href": "\(refunds)/full/\(key)"],
                        "payments:partialRefund": ["href": "\(refunds)/partials/\(key)"],
                        "payments:partialSettle": ["href": "\(mock.baseURL)/payments/settlements/partials/\(key)"],
                        "payments:cancel": ["href": "\(mock.baseURL)/payments/authorizations/cancellations/\(key)"],
                    ]
                ])
        }
    }
}
