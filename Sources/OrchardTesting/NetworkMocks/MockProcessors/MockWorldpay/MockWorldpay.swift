import Foundation
import Synchronization

/// A Worldpay Access account the mock accepts.
public struct MockWorldpayAccount: Sendable {
    public var entity: String
    public var username: String
    public var password: String

    public init(entity: String, username: String, password: String) {
        self.entity = entity
        self.username = username
        self.password = password
    }
}

/// The stand-in for Worldpay Access behind ``MockProcessors``: Basic-authenticated payments
/// (customer- and merchant-initiated), settle, cancel and refund by the links it hands out,
/// Payment Queries and payment events with their lag, and tokens' inquiry, card expiry update and deletion.
final class MockWorldpay: MockProcessorAPI {
    let name = "worldpay"
    let account: MockWorldpayAccount
    /// How long after a payment or refund Payment Queries and payment events show it
    /// (``MockProcessors/paymentQueriesLag``, ``MockProcessors/paymentEventsLag``).
    let lags = Mutex<(queries: TimeInterval, events: TimeInterval)>((0, 0))

    init(account: MockWorldpayAccount) {
        self.account = account
    }

    func handle(_ request: MockProcessorRequest, mock: MockProcessors) -> Reply? {
        let path = request.path
        switch request.method {
        case "POST" where path.hasPrefix("/payments/settlements/refunds/"): return worldpayRefund(request, mock: mock)
        case "POST" where path.hasPrefix("/payments/settlements/partials/"): return worldpayPartialSettle(request, mock: mock)
        case "POST" where path == "/cardPayments/merchantInitiatedTransactions": return worldpayMandateCharge(request, mock: mock)
        case "DELETE" where path.hasPrefix("/tokens/"): return worldpayDeleteToken(request, mock: mock)
        case "PUT" where path.hasPrefix("/tokens/") && path.hasSuffix(Self.cardExpirySuffix):
            return worldpayCardExpiry(request, mock: mock)
        case "GET" where path.hasPrefix("/tokens/"): return worldpayTokenInquiry(request, mock: mock)
        case "GET" where path == "/paymentQueries/payments" || path.hasPrefix("/paymentQueries/payments/"):
            return worldpayPaymentQuery(request, mock: mock)
        case "GET" where path == "/payments/events": return worldpayEvents(request, mock: mock)
        case "POST" where path == "/cardPayments/customerInitiatedTransactions": return worldpayAuthorize(request, mock: mock)
        default: break
        }
        // Settle and cancel answer whatever the method, as they always have here.
        if path.hasPrefix("/payments/settlements/full/") || path.hasPrefix("/payments/authorizations/cancellations/") {
            return worldpayAction(request, mock: mock)
        }
        return nil
    }

    /// A customer-initiated authorization's `transactionReference`.
    func authorizationReference(_ request: MockProcessorRequest) -> String? {
        guard request.method == "POST", request.path == "/cardPayments/customerInitiatedTransactions" else { return nil }
        let body = try? JSONSerialization.jsonObject(with: Data(request.body)) as? [String: Any]
        return body?["transactionReference"] as? String ?? ""
    }
}
