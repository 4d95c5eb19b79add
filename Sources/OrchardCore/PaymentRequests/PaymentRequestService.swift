import ApplePay
import Foundation

/// Payment requests a shop's backend creates for its own cart, and what the shop and the
/// shopper's page see of them. A request and its open order are created together, once per
/// Idempotency-Key; a request is visible only to its own merchant.
public struct PaymentRequestService: Sendable {
    /// Payment requests and the orders they open.
    let paymentRequests: any PaymentRequests
    /// Orders and their payments.
    let orderPayments: any OrderPayments
    /// The payments' refunds.
    let refunds: any Refunds
    let vault: PaymentVault
    let time: TimeSource

    /// Seconds a request takes payments when the shop names no `expiresInSeconds`, and the bounds.
    public static let defaultExpiry = 1800
    /// Up to 30 days: ticket shops and invoices give their customers weeks to pay (pretix's payment
    /// terms are often 14 days or more).
    public static let expiryRange = 60...2_592_000

    /// A service over the repositories it uses: payment requests, their orders and payments, and the payments' refunds.
    public init(
        paymentRequests: any PaymentRequests, orderPayments: any OrderPayments, refunds: any Refunds, vault: PaymentVault, time: TimeSource
    ) {
        self.paymentRequests = paymentRequests
        self.orderPayments = orderPayments
        self.refunds = refunds
        self.vault = vault
        self.time = time
    }
    /// Creates the request and its open order, or, for an Idempotency-Key the merchant used
    /// before with the same draft, answers the earlier one (`created` false).
    public func create(_ draft: PaymentRequestDraft, idempotencyKey key: String, merchant: MerchantConfiguration) async throws -> (
        view: PaymentRequestView, created: Bool
    ) {
        let cart = try self.cart(draft, merchant: merchant)
        try checkAgreement(draft, merchant: merchant)
        let (reference, metadata) = try ShopInput.checkedReference(
            draft.reference, metadata: draft.metadata, naming: "the shop's own order reference")
        let expiry = draft.expiresInSeconds ?? Self.defaultExpiry
        guard Self.expiryRange.contains(expiry) else {
            throw CoreError(
                .invalidRequest, "expiresInSeconds must be \(Self.expiryRange.lowerBound)–\(Self.expiryRange.upperBound)")
        }
        let priced: PricedOrder
        do throws(ApplePayError) {
            priced = try cart.price()
        } catch {
            throw CoreError(.invalidCart, error.message)
        }
        let now = time.now
        let order = OrderRecord.opened(
            merchantIdentifier: merchant.merchantIdentifier, priced: priced, at: now, openFor: TimeInterval(expiry))
        let record = PaymentRequestRecord(
            id: order.id, merchantIdentifier: merchant.merchantIdentifier, reference: reference, metadata: metadata, cart: cart,
            idempotencyKey: key, fingerprint: try draft.fingerprint(), expiresAt: order.expiresAt ?? now, createdAt: now)
        let (stored, created) = try await paymentRequests.createPaymentRequest(record, order: order)
        return (try await view(stored, merchant: merchant), created)
    }

    /// The shop's cart, checked: the merchant's catalogue country when the draft names none.
    func cart(_ draft: PaymentRequestDraft, merchant: MerchantConfiguration) throws(CoreError) -> ShopCart {
        guard let country = draft.countryCode ?? merchant.catalogue?.countryCode else {
            throw CoreError(.invalidRequest, "countryCode is required: the merchant's ISO 3166 country, like GB")
        }
        var cart = ShopCart(
            currency: draft.currency, countryCode: country, amount: draft.amount,
            lines: (draft.lineItems ?? []).map { ShopCart.Line(label: $0.label, amount: $0.amount) },
            shippingMethods: (draft.shippingMethods ?? []).map {
                Catalogue.ShippingMethod(
                    identifier: $0.identifier, label: $0.label, detail: $0.detail ?? "", amount: $0.amount, countries: $0.countries)
            }, requiredShippingContactFields: draft.requiredShippingContactFields ?? [],
            requiredBillingContactFields: draft.requiredBillingContactFields ?? [],
            supportedNetworks: draft.supportedNetworks ?? merchant.catalogue?.supportedNetworks ?? ShopCart.defaultNetworks,
            agreement: draft.agreement)
        cart.totalLabel = draft.totalLabel
        cart.capture = draft.capture
        do throws(ApplePayError) {
            return try cart.validated()
        } catch {
            throw CoreError(.invalidCart, error.message)
        }
    }

    /// The agreement's own rules at this instant, no split payment, and a mandate only where
    /// Orchard will see the merchant token ID that Apple's notifications about it name.
    func checkAgreement(_ draft: PaymentRequestDraft, merchant: MerchantConfiguration) throws(CoreError) {
        if draft.multiTokenContexts != nil {
            throw CoreError(
                .invalidRequest,
                "multiTokenContexts (one payment split across several merchants) is not supported: none of Orchard's processors takes it; create one payment request per merchant"
            )
        }
        guard let agreement = draft.agreement else { return }
        if let held = merchant.processingKeys.firstIndex(where: { $0.processorHeldScheme != nil }) {
            throw CoreError(
                .invalidAgreement,
                """
                this merchant's processingKeys[\(held)] is a certificate alone: the processor decrypts its tokens, so Orchard never \
                sees the merchant token ID that Apple's notifications about a mandate name, and would miss them; take \
                recurring, deferred and automatic-reload payments with a processing key whose private key Orchard holds
                """)
        }
        do throws(ApplePayError) {
            try agreement.check(now: time.now)
        } catch {
            throw CoreError(.invalidAgreement, error.message)
        }
    }

    /// The merchant's request `id`; another merchant's is "not found", never "forbidden".
    public func request(id: String, merchant: MerchantConfiguration) async throws -> PaymentRequestRecord {
        guard RecordIdentifier.isLookup(id), let record = try await paymentRequests.paymentRequest(id: id),
            record.merchantIdentifier == merchant.merchantIdentifier
        else { throw CoreError(.notFound, "there is no payment request \(id.prefix(64))") }
        return record
    }

    /// The request the page's client secret opens, as the shopper may see it.
    /// Withdraws an unpaid request: its order `open` → `cancelled` with a `payment_request.cancelled`
    /// event, as one compare-and-set. Cancelling a cancelled request again answers it as it is; a
    /// request being paid (a payment `pending` or `unknown`: `invalidState`), paid or expired
    /// (`orderNotOpen`) is refused, unchanged.
    public func cancel(id: String, merchant: MerchantConfiguration) async throws -> PaymentRequestView {
        let record = try await request(id: id, merchant: merchant)
        // Twice at most: a payment refused between the compare-and-set and the read leaves the order open again.
        for _ in 0..<2 {
            if try await paymentRequests.cancelOpenPaymentRequest(id: record.id, at: time.now) {
                return try await view(record, merchant: merchant)
            }
            guard let order = try await orderPayments.order(id: record.id) else {
                throw CoreError(.inconsistent, "the payment request's order is missing")
            }
            switch order.state {
            case .open: continue
            case .cancelled: return try await view(record, merchant: merchant)
            // A conflict the shop resolves by waiting for the webhook, not a payment outcome it did not see.
            case .pending, .unknown:
                throw CoreError(
                    .invalidState,
                    "a payment of this request is with the processor; it cannot be withdrawn until its outcome is known (its webhook tells)"
                )
            case .paid: throw CoreError(.orderNotOpen, "this payment request is paid: refund or cancel its payment instead")
            case .expired: throw CoreError(.orderNotOpen, "this payment request has expired")
            }
        }
        throw CoreError(.invalidState, "this payment request is being paid right now; ask again in a moment")
    }

    public func open(clientSecret: String, merchant: MerchantConfiguration, simulatedSheet: String?) async throws
        -> ShopperPaymentRequestView
    {
        guard let id = vault.requestId(fromClientSecret: clientSecret) else {
            throw CoreError(.notFound, "there is no such payment request (check the clientSecret)")
        }
        let record = try await request(id: id, merchant: merchant)
        var shopper = ShopperPaymentRequestView(try await view(record, merchant: merchant), simulatedSheet: simulatedSheet)
        shopper.priceVersion = try await orderPayments.order(id: record.id)?.priceVersion
        shopper.googlePay = merchant.googlePay.map { GooglePayPageSettings($0) }
        return shopper
    }

    /// The request with its order's status and total, and its payments with what each had refunded.
    public func view(_ record: PaymentRequestRecord, merchant: MerchantConfiguration) async throws -> PaymentRequestView {
        guard let order = try await orderPayments.order(id: record.id) else {
            throw CoreError(.inconsistent, "the payment request's order is missing")
        }
        var payments: [PaymentView] = []
        for payment in try await orderPayments.payments(orderId: record.id) {
            let refunded = try await refunds.refunds(paymentId: payment.id).filter { $0.state == .refunded }.reduce(0) { $0 + $1.amount }
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
