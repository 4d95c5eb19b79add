import ApplePay
import Foundation
import Hummingbird
import OrchardCore

/// What `POST /api/payment-requests/open` shows the shopper's page: enough to pay and to say
/// how an earlier attempt ended, and nothing that is the shop's or the processor's business (the
/// shop's metadata, the processor, its references, codes and messages, mandates and merchant
/// tokens). The shop reads those through `/v1/`.
struct ShopperPaymentRequestView: ResponseEncodable {
    /// One attempt, as the shopper may see it.
    struct Payment: Encodable {
        var id: String
        var state: PaymentState
        var amount: Int64
        var currency: String
        var network: String?
        var lastFour: String
        var createdAt: Date
    }

    var id: String
    var merchantIdentifier: String
    /// `requires_payment`, `processing`, `paid`, `cancelled` or `expired`.
    var status: String
    /// The shop's own order reference (the shopper's order number).
    var reference: String
    var amount: Int64
    var total: Int64
    var currency: String
    var expiresAt: Date
    var paymentRequest: ApplePayPaymentRequest
    var payments: [Payment]
    var simulatedSheet: String?
    var tokenNotificationPath: String?

    init(_ view: PaymentRequestView, simulatedSheet: String?) {
        id = view.id
        merchantIdentifier = view.merchantIdentifier
        status = view.status
        reference = view.reference
        amount = view.amount
        total = view.total
        currency = view.currency
        expiresAt = view.expiresAt
        paymentRequest = view.paymentRequest
        payments = view.payments.map {
            Payment(
                id: $0.id, state: $0.state, amount: $0.amount, currency: $0.currency, network: $0.network, lastFour: $0.lastFour,
                createdAt: $0.createdAt)
        }
        self.simulatedSheet = simulatedSheet
        tokenNotificationPath = view.tokenNotificationPath
    }
}
