import ApplePay
import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import OrchardCore

/// `POST /v1/payment-requests` and `GET /v1/payment-requests/{id}`: the shop's backend creates
/// a payment for its own cart and reads where it stands. The page opens it with the client
/// secret (`POST /api/payment-requests/open`) and pays it on the shop's domain.
struct PaymentRequestsController {
    let store: any PaymentRequests & OrderPayments & Refunds
    let vault: PaymentVault
    let time: TimeSource
    /// The demo's simulated sheet, named to the page that opens a request; nil outside the demo.
    let simulatedSheet: String?
    let limiter: RateLimiter

    static let defaultExpiry = 1800
    static let expiryRange = 60...604_800

    struct ShippingMethodBody: Codable {
        var identifier: String
        var label: String
        var detail: String?
        var amount: Int64
        var countries: [String]?
    }

    struct LineBody: Codable {
        var label: String
        var amount: Int64
    }

    /// The create body; re-encoded with sorted keys, it is the idempotency fingerprint.
    struct CreateBody: Codable {
        var amount: Int64
        var currency: String
        var countryCode: String?
        var reference: String
        var lineItems: [LineBody]?
        var shippingMethods: [ShippingMethodBody]?
        var requiredShippingContactFields: [String]?
        var requiredBillingContactFields: [String]?
        var supportedNetworks: [String]?
        var metadata: [String: String]?
        var expiresInSeconds: Int?
        /// A recurring, deferred or automatic-reload agreement: the payment then sets up a mandate.
        var agreement: PaymentAgreement?
        /// Read only to refuse it: decoding ignores unknown keys, and a split payment silently
        /// charged as one would be worse than a clear 400.
        var multiTokenContexts: [TokenContextBody]?
    }

    /// Apple Pay JS's `ApplePayPaymentTokenContext`, loosely: any shape is refused the same way.
    struct TokenContextBody: Codable {
        var merchantIdentifier: String?
    }

    struct OpenBody: Decodable {
        var clientSecret: String
    }

    func addRoutes(to v1: RouterGroup<OrchardRequestContext>, page router: Router<OrchardRequestContext>) {
        v1.postJSON("payment-requests") { request, context in try await create(request, context: context) }
        v1.get("payment-requests/{id}") { _, context in
            let merchant = try context.requireAPIMerchant()
            let record = try await requireRequest(try context.parameters.require("id"), merchant: merchant)
            return try await view(record, merchant: merchant)
        }
        router.postJSON("/api/payment-requests/open") { request, context in
            let (merchant, _) = try context.requireMerchant()
            let body = try await request.decode(as: OpenBody.self, context: context)
            guard let id = vault.requestId(fromClientSecret: body.clientSecret) else {
                throw OrchardError(.notFound, "there is no such payment request (check the clientSecret)")
            }
            let view = try await view(try await requireRequest(id, merchant: merchant), merchant: merchant)
            return ShopperPaymentRequestView(view, simulatedSheet: simulatedSheet)
        }
    }

    func create(_ request: Request, context: OrchardRequestContext) async throws -> EditedResponse<PaymentRequestView> {
        let merchant = try context.requireAPIMerchant()
        try limiter.check(.paymentRequests, context: context, merchant: merchant.merchantIdentifier)
        let key = try idempotencyKey(request)
        let body = try await request.decode(as: CreateBody.self, context: context)
        let cart = try self.cart(body, merchant: merchant)
        try checkAgreement(body)
        let (reference, metadata) = try checkedReference(body)
        let expiry = body.expiresInSeconds ?? Self.defaultExpiry
        guard Self.expiryRange.contains(expiry) else {
            throw OrchardError(.invalidRequest, "expiresInSeconds must be \(Self.expiryRange.lowerBound)–\(Self.expiryRange.upperBound)")
        }
        let priced: PricedOrder
        do throws(ApplePayError) {
            priced = try cart.price()
        } catch {
            throw OrchardError(.invalidCart, error.message)
        }
        let now = time.now
        let order = OrderRecord.opened(
            merchantIdentifier: merchant.merchantIdentifier, priced: priced, at: now, openFor: TimeInterval(expiry))
        let id = order.id
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        let record = PaymentRequestRecord(
            id: id, merchantIdentifier: merchant.merchantIdentifier, reference: reference, metadata: metadata, cart: cart,
            idempotencyKey: key, fingerprint: Array(SHA256.hash(data: try encoder.encode(body))), expiresAt: order.expiresAt ?? now,
            createdAt: now)
        let (stored, created): (PaymentRequestRecord, Bool)
        do {
            (stored, created) = try await store.createPaymentRequest(record, order: order)
        } catch let error as BusinessRefusal where error.code == .idempotencyMismatch {
            throw OrchardError(.idempotencyMismatch, error.message)
        }
        return EditedResponse(status: created ? .created : .ok, response: try await view(stored, merchant: merchant))
    }

    /// The shop's cart, checked: the merchant's catalogue country when the body names none.
    func cart(_ body: CreateBody, merchant: MerchantConfiguration) throws -> ShopCart {
        guard let country = body.countryCode ?? merchant.catalogue?.countryCode else {
            throw OrchardError(.invalidRequest, "countryCode is required: the merchant's ISO 3166 country, like GB")
        }
        let cart = ShopCart(
            currency: body.currency, countryCode: country, amount: body.amount,
            lines: (body.lineItems ?? []).map { ShopCart.Line(label: $0.label, amount: $0.amount) },
            shippingMethods: (body.shippingMethods ?? []).map {
                Catalogue.ShippingMethod(
                    identifier: $0.identifier, label: $0.label, detail: $0.detail ?? "", amount: $0.amount, countries: $0.countries)
            }, requiredShippingContactFields: body.requiredShippingContactFields ?? [],
            requiredBillingContactFields: body.requiredBillingContactFields ?? [],
            supportedNetworks: body.supportedNetworks ?? merchant.catalogue?.supportedNetworks ?? ShopCart.defaultNetworks,
            agreement: body.agreement)
        do throws(ApplePayError) {
            return try cart.validated()
        } catch {
            throw OrchardError(.invalidCart, error.message)
        }
    }

    /// The agreement's own rules at this instant, and no split payment.
    func checkAgreement(_ body: CreateBody) throws {
        if body.multiTokenContexts != nil {
            throw OrchardError(
                .invalidRequest,
                "multiTokenContexts (one payment split across several merchants) is not supported: none of Orchard's processors takes it; create one payment request per merchant"
            )
        }
        guard let agreement = body.agreement else { return }
        do throws(ApplePayError) {
            try agreement.check(now: time.now)
        } catch {
            throw OrchardError(.invalidAgreement, error.message)
        }
    }

    func checkedReference(_ body: CreateBody) throws -> (String, [String: String]) {
        try checkedShopReference(body.reference, metadata: body.metadata, naming: "the shop's own order reference")
    }

    func requireRequest(_ id: String, merchant: MerchantConfiguration) async throws -> PaymentRequestRecord {
        guard id.utf8.count <= 64, let record = try await store.paymentRequest(id: id),
            record.merchantIdentifier == merchant.merchantIdentifier
        else { throw OrchardError(.notFound, "there is no payment request \(id.prefix(64))") }
        return record
    }

    func view(_ record: PaymentRequestRecord, merchant: MerchantConfiguration) async throws -> PaymentRequestView {
        guard let order = try await store.order(id: record.id) else {
            throw OrchardError(.internalError, "the payment request's order is missing")
        }
        var payments: [PaymentView] = []
        for payment in try await store.payments(orderId: record.id) {
            let refunded = try await store.refunds(paymentId: payment.id).filter { $0.state == .refunded }.reduce(0) { $0 + $1.amount }
            payments.append(PaymentView(payment: payment, request: record, refunded: refunded))
        }
        return PaymentRequestView(
            record: record, order: order, clientSecret: vault.clientSecret(forRequest: record.id), now: time.now,
            paymentRequest: record.cart.paymentRequest(
                order.priced, displayName: merchant.displayName, applicationData: order.applicationData,
                supportsCoupons: merchant.quote != nil),
            payments: payments)
    }
}

/// The shop's reference (1–128 characters) and metadata (at most 20 keys of 1–40 characters,
/// values of at most 500), checked; `naming` says what the reference is in the message.
func checkedShopReference(_ reference: String, metadata: [String: String]?, naming: String) throws -> (String, [String: String]) {
    guard (1...128).contains(reference.count) else {
        throw OrchardError(.invalidRequest, "reference (\(naming)) must be 1–128 characters")
    }
    let metadata = metadata ?? [:]
    guard metadata.count <= 20, metadata.allSatisfy({ (1...40).contains($0.key.count) && $0.value.count <= 500 }) else {
        throw OrchardError(.invalidRequest, "metadata takes at most 20 keys of 1–40 characters, values of at most 500")
    }
    return (reference, metadata)
}

/// The `Idempotency-Key` header: required, 1–255 visible ASCII characters.
func idempotencyKey(_ request: Request) throws -> String {
    guard let name = HTTPField.Name("Idempotency-Key"), let key = request.headers[name] else {
        throw OrchardError(.invalidRequest, "send an Idempotency-Key header (a UUID per new request) so a retry cannot create a second one")
    }
    guard (1...255).contains(key.utf8.count), key.utf8.allSatisfy({ (0x21...0x7E).contains($0) }) else {
        throw OrchardError(.invalidRequest, "Idempotency-Key must be 1–255 visible ASCII characters")
    }
    return key
}

/// A payment request as the API answers it.
struct PaymentRequestView: ResponseEncodable {
    var id: String
    var merchantIdentifier: String
    /// For the page's `orchard.js`: opens this request, nothing else.
    var clientSecret: String
    /// `requires_payment`, `processing`, `paid`, `cancelled` or `expired`.
    var status: String
    var reference: String
    var metadata: [String: String]
    var amount: Int64
    /// With the shipping method chosen so far.
    var total: Int64
    var currency: String
    var expiresAt: Date
    var createdAt: Date
    var paymentRequest: ApplePayPaymentRequest
    var payments: [PaymentView]
    /// With an agreement: where Apple notifies changes to the merchant token, relative to
    /// Orchard's public address. `orchard.js` makes it absolute against the address it loads
    /// Orchard from and puts it in the request as `tokenNotificationURL`.
    var tokenNotificationPath: String?

    init(
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
        amount = record.cart.amount
        total = order.priced.total
        currency = record.cart.currency
        expiresAt = record.expiresAt
        createdAt = record.createdAt
        self.paymentRequest = paymentRequest
        self.payments = payments
        if record.cart.agreement != nil {
            tokenNotificationPath = TokenEventsController.notificationPath(merchantIdentifier: record.merchantIdentifier)
        }
    }
}
