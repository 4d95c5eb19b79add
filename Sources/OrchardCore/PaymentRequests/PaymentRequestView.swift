import ApplePay
import Foundation

/// A payment request as the payments API shows it to the shop that created it.
public struct PaymentRequestView: Codable, Sendable, Equatable {
    public var id: String
    public var merchantIdentifier: String
    /// For the page's `orchard.js`: opens this request, nothing else.
    public var clientSecret: String
    /// `requires_payment`, `processing`, `paid`, `cancelled` or `expired`.
    public var status: String
    public var reference: String
    public var metadata: [String: String]
    /// The `Idempotency-Key` the shop created it with.
    public var idempotencyKey: String
    public var amount: Int64
    /// With the shipping method chosen so far.
    public var total: Int64
    public var currency: String
    /// `automatic` (Orchard captures each authorized payment) or `manual` (the shop does).
    public var capture: CaptureMode
    public var expiresAt: Date
    public var createdAt: Date
    public var paymentRequest: ApplePayPaymentRequest
    public var payments: [PaymentView]
    /// With an agreement: where Apple notifies changes to the merchant token, relative to
    /// Orchard's public address. `orchard.js` makes it absolute against the address it loads
    /// Orchard from and puts it in the request as `tokenNotificationURL`.
    public var tokenNotificationPath: String?

    public init(
        record: PaymentRequestRecord, order: OrderRecord, clientSecret: String, now: Date, paymentRequest: ApplePayPaymentRequest,
        payments: [PaymentView]
    ) {
        id = record.id
        merchantIdentifier = record.merchantIdentifier
        self.clientSecret = clientSecret
        status =
            switch order.state {
            case .open: record.expiresAt <= now ? "expired" : "requires_payment"
            case .pending, .unknown: "processing"
            case .paid: "paid"
            case .cancelled: "cancelled"
            case .expired: "expired"
            }
        reference = record.reference
        metadata = record.metadata
        idempotencyKey = record.idempotencyKey
        amount = record.cart.amount
        total = order.priced.total
        currency = record.cart.currency
        capture = record.cart.capture ?? .manual
        expiresAt = record.expiresAt
        createdAt = record.createdAt
        self.paymentRequest = paymentRequest
        self.payments = payments
        if record.cart.agreement != nil {
            tokenNotificationPath = Self.tokenNotificationPath(merchantIdentifier: record.merchantIdentifier)
        }
    }

    /// Where Apple notifies a merchant's token events, relative to Orchard's public address: the
    /// server's `/apple-pay/token-events/{merchant}` route, the identifier percent-encoded (partner
    /// IDs may hold `|`, `&`, `$`…).
    public static func tokenNotificationPath(merchantIdentifier: String) -> String {
        "apple-pay/token-events/"
            + (merchantIdentifier.addingPercentEncoding(withAllowedCharacters: .urlPathSegmentUnreserved) ?? merchantIdentifier)
    }
}

/// What the shopper's page is shown of a payment request: enough to pay and to say how an
/// earlier attempt ended, and nothing that is the shop's or the processor's business (the shop's
/// metadata, the processor, its references, codes and messages, mandates and merchant tokens).
/// The shop reads those through the payments API (``PaymentRequestView``).
public struct ShopperPaymentRequestView: Codable, Sendable, Equatable {
    /// One attempt, as the shopper may see it.
    public struct Payment: Codable, Sendable, Equatable {
        public var id: String
        public var state: PaymentState
        public var amount: Int64
        public var currency: String
        public var network: String?
        public var lastFour: String
        public var createdAt: Date
    }

    public var id: String
    public var merchantIdentifier: String
    /// `requires_payment`, `processing`, `paid`, `cancelled` or `expired`.
    public var status: String
    /// The shop's own order reference (the shopper's order number).
    public var reference: String
    public var amount: Int64
    public var total: Int64
    public var currency: String
    public var expiresAt: Date
    public var paymentRequest: ApplePayPaymentRequest
    public var payments: [Payment]
    /// The demo's simulated sheet, named to the page; nil outside the demo.
    public var simulatedSheet: String?
    public var tokenNotificationPath: String?
    /// The order's price version: a Google Pay payment names the version its sheet showed.
    public var priceVersion: Int?
    /// Google Pay, when the merchant takes it.
    public var googlePay: GooglePayPageSettings?

    public init(_ view: PaymentRequestView, simulatedSheet: String?) {
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
