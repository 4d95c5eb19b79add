import ApplePay
import Crypto
import Foundation
import Hummingbird
import Logging
import OrchardCore

/// `POST /api/orders` and the updates the Apple Pay sheet asks for. Every number comes from
/// the server's catalogue; an order is visible only on its own merchant's domains.
struct OrdersController {
    let configuration: ServerConfiguration
    let store: any OrderPayments & PaymentRequests
    let time: TimeSource
    /// The shops' quote URLs, for merchants that price sheet changes themselves.
    let quotes: QuoteClient?
    let limiter: RateLimiter

    struct CreateBody: Decodable { var items: [CartItem] }
    /// What Apple Pay reveals of the address before payment (each at most 64 characters is kept).
    struct ShippingContactBody: Decodable {
        var countryCode: String?
        var postalCode: String?
        var locality: String?
        var administrativeArea: String?

        var address: RedactedAddress {
            func clip(_ value: String?) -> String? { value.map { String($0.prefix(64)) } }
            return RedactedAddress(
                countryCode: clip(countryCode), postalCode: clip(postalCode), locality: clip(locality),
                administrativeArea: clip(administrativeArea))
        }
    }
    struct ShippingMethodBody: Decodable { var identifier: String }
    struct CouponBody: Decodable { var couponCode: String }
    struct PaymentMethodBody: Decodable { var type: String? }

    struct Created: ResponseEncodable {
        var orderId: String
        var paymentRequest: ApplePayPaymentRequest
    }

    func addRoutes(to router: Router<OrchardRequestContext>) {
        router.postJSON("/api/orders") { request, context in try await create(request, context: context) }
        router.postJSON("/api/orders/{id}/shipping-contact") { request, context in
            try admitUpdate(context)
            let body = try await request.decode(as: ShippingContactBody.self, context: context)
            return try await update(
                context, id: try context.parameters.require("id"), includeShippingMethods: true, address: body.address
            ) { .shippingContact(country: body.countryCode, of: $0) }
        }
        router.postJSON("/api/orders/{id}/shipping-method") { request, context in
            try admitUpdate(context)
            let body = try await request.decode(as: ShippingMethodBody.self, context: context)
            return try await update(context, id: try context.parameters.require("id"), includeShippingMethods: false) {
                .shippingMethod(body.identifier, of: $0)
            }
        }
        router.postJSON("/api/orders/{id}/coupon") { request, context in
            try admitUpdate(context)
            let body = try await request.decode(as: CouponBody.self, context: context)
            return try await update(context, id: try context.parameters.require("id"), includeShippingMethods: false) {
                .coupon(body.couponCode, of: $0)
            }
        }
        // The sheet's card changed: reprice from the catalogue. No method changes the price today,
        // but the page always shows what the server says, so a surcharge rule would slot in here.
        router.postJSON("/api/orders/{id}/payment-method") { request, context in
            try admitUpdate(context)
            _ = try await request.decode(as: PaymentMethodBody.self, context: context)
            return try await update(context, id: try context.parameters.require("id"), includeShippingMethods: false) {
                .unchanged($0)
            }
        }
    }

    /// Each sheet update may ask the shop's quote URL: limited per shopper's address and per
    /// merchant before anything is read or asked.
    func admitUpdate(_ context: OrchardRequestContext) throws {
        let (merchant, _) = try context.requireMerchant()
        try limiter.check(.orderUpdates, context: context, merchant: merchant.merchantIdentifier)
    }

    func merchant(for context: OrchardRequestContext) throws -> (MerchantConfiguration, Catalogue) {
        let (merchant, _) = try context.requireMerchant()
        guard let catalogue = merchant.catalogue else {
            throw OrchardError(.ordersUnavailable, "this shop takes no orders (no catalogue configured)")
        }
        return (merchant, catalogue)
    }

    func create(_ request: Request, context: OrchardRequestContext) async throws -> EditedResponse<Created> {
        let (merchant, catalogue) = try merchant(for: context)
        try limiter.check(.orders, context: context, merchant: merchant.merchantIdentifier)
        let body = try await request.decode(as: CreateBody.self, context: context)
        let priced: PricedOrder
        do {
            priced = try Pricing.price(items: body.items, catalogue: catalogue, at: time.now)
        } catch {
            throw OrchardError(.invalidCart, error.message)
        }
        // An abandoned order expires (and is purged later) instead of staying open for ever.
        let order = OrderRecord.opened(
            merchantIdentifier: merchant.merchantIdentifier, priced: priced, at: time.now, openFor: configuration.ordersOpenFor.timeInterval
        )
        try await store.insert(order)
        let paymentRequest = ApplePayPaymentRequest(
            order: priced, catalogue: catalogue, displayName: merchant.displayName, applicationData: order.applicationData)
        return EditedResponse(status: .created, response: Created(orderId: order.id, paymentRequest: paymentRequest))
    }

    /// Reprices an open order; shopper-fixable problems come back as Apple Pay errors with the previous totals.
    func update(
        _ context: OrchardRequestContext, id: String, includeShippingMethods: Bool, address: RedactedAddress? = nil,
        change: (PricedOrder) -> SheetChange
    ) async throws -> ApplePayUpdate {
        let (merchant, _) = try context.requireMerchant()
        let order = try await openOrder(id: id, merchant: merchant, store: store, now: time.now)
        let change = change(order.priced)
        let (items, method, coupon, country) = (change.items, change.shippingMethod, change.couponCode, change.shippingCountry)
        var updated = order
        var errors: [ApplePayErrorItem] = []
        let available: [Catalogue.ShippingMethod]
        if let request = try await store.paymentRequest(id: order.id) {
            var cart = request.cart
            if let endpoint = merchant.quote, let quotes {
                (cart, updated.priced, errors) = try await quoted(
                    request, order: order.priced, method: method, coupon: coupon,
                    address: address ?? order.priced.shippingAddress ?? RedactedAddress(countryCode: country), endpoint: endpoint,
                    quotes: quotes)
            } else {
                (updated.priced, errors) = try reprice(cart, order: order.priced, method: method, coupon: coupon, country: country)
            }
            available = cart.shippingMethods(for: updated.priced.shippingCountry)
        } else {
            guard let catalogue = merchant.catalogue else {
                throw OrchardError(.ordersUnavailable, "this shop takes no orders (no catalogue configured)")
            }
            (updated.priced, errors) = try reprice(
                catalogue, order: order.priced, items: items, method: method, coupon: coupon, country: country)
            available = Pricing.availableShippingMethods(catalogue: catalogue, country: updated.priced.shippingCountry)
        }
        if updated.priced != order.priced {
            do {
                try await store.updateOpen(order.repriced(updated.priced))
            } catch let error as BusinessRefusal where error.code == .orderNotOpen {
                throw OrchardError(.orderNotOpen, "this order is already paid")
            } catch let error as BusinessRefusal where error.code == .orderChanged {
                throw OrchardError(.orderChanged, "the order changed meanwhile (another update or its payment); send this change again")
            }
        }
        return ApplePayUpdate(
            order: updated.priced, displayName: merchant.displayName, shippingMethods: includeShippingMethods ? available : nil,
            errors: errors)
    }

    /// The catalogue's price for the change; a bad coupon is dropped but the rest of the change kept.
    func reprice(
        _ catalogue: Catalogue, order: PricedOrder, items: [CartItem], method: String?, coupon: String?, country: String?
    ) throws -> (PricedOrder, [ApplePayErrorItem]) {
        do {
            return (
                try Pricing.price(
                    items: items, catalogue: catalogue, shippingMethodId: method, couponCode: coupon, shippingCountry: country, at: time.now
                ),
                []
            )
        } catch {
            guard let item = ApplePayErrorItem(error) else { throw OrchardError(.invalidRequest, error.message) }
            guard error.code == .couponInvalid || error.code == .couponExpired else { return (order, [item]) }
            let withoutCoupon = try? Pricing.price(
                items: items, catalogue: catalogue, shippingMethodId: method, shippingCountry: country, at: time.now)
            return (withoutCoupon ?? order, [item])
        }
    }

    /// The shop's own price for the change, from its quote URL: its amount, lines and methods, the
    /// method it selects (else the shopper's, else the first that ships) and its errors. Anything
    /// that does not check fails the update and keeps the old total.
    func quoted(
        _ request: PaymentRequestRecord, order: PricedOrder, method: String?, coupon: String?, address: RedactedAddress,
        endpoint: WebhookEndpoint, quotes: QuoteClient
    ) async throws -> (ShopCart, PricedOrder, [ApplePayErrorItem]) {
        let country = address.countryCode
        let question = QuoteRequest(
            paymentRequestId: request.id, reference: request.reference, metadata: request.metadata, currency: request.cart.currency,
            amount: request.cart.amount, shippingContact: address, shippingMethod: method, couponCode: coupon)
        let answer = try await quotes.quote(question, endpoint: endpoint, merchant: request.merchantIdentifier)
        let cart: ShopCart
        do {
            cart = try answer.cart(replacing: request.cart)
        } catch {
            throw quotes.failure("answered a cart that does not check: \(error.message)", question)
        }
        let offered = cart.shippingMethods(for: country?.uppercased())
        let chosen = [answer.shippingMethod, method].compactMap { $0 }.first { id in offered.contains { $0.identifier == id } }
        var priced: PricedOrder
        do {
            priced = try cart.price(shippingMethodId: chosen, shippingCountry: country)
        } catch {
            // Nothing ships there: the shop's errors (or Apple Pay's) with the old total.
            return (cart, order, answer.errors ?? ApplePayErrorItem(error).map { [$0] } ?? [])
        }
        priced.couponCode = answer.couponCode
        priced.shippingAddress = address
        return (cart, priced, answer.errors ?? [])
    }

    /// The shop's cart with the shopper's choices: its own amount plus the chosen shipping method
    /// (nil after an address change: the first that ships there). Coupons are the shop's business.
    func reprice(_ cart: ShopCart, order: PricedOrder, method: String?, coupon: String?, country: String?) throws -> (
        PricedOrder, [ApplePayErrorItem]
    ) {
        if let coupon, !coupon.isEmpty, coupon != order.couponCode {
            return (order, [ApplePayErrorItem(code: "couponCodeInvalid", message: "this shop takes no coupon codes here")])
        }
        do {
            return (try cart.price(shippingMethodId: method, shippingCountry: country), [])
        } catch {
            guard let item = ApplePayErrorItem(error) else { throw OrchardError(.invalidRequest, error.message) }
            return (order, [item])
        }
    }

}

/// The open order `id` of `merchant`; another merchant's order is "not found", never "forbidden".
///
/// An order whose last payment attempt has an unknown outcome is payable (`allowUnknown`) but
/// not repriceable: the retry must charge the same amount under the same reference.
func openOrder(id: String, merchant: MerchantConfiguration, store: any OrderPayments, now: Date) async throws -> OrderRecord {
    guard id.utf8.count <= 64, let order = try await store.order(id: id), order.merchantIdentifier == merchant.merchantIdentifier else {
        throw OrchardError(.notFound, "there is no such order")
    }
    switch order.state {
    case .open:
        if let expiry = order.expiresAt, expiry <= now { throw OrchardError(.orderNotOpen, "this payment request has expired") }
        return order
    case .expired: throw OrchardError(.orderNotOpen, "this payment request has expired")
    case .pending, .unknown:
        throw OrchardError(.orderNotOpen, "this order's payment is being confirmed; it cannot change now")
    case .paid: throw OrchardError(.orderNotOpen, "this order is already paid")
    case .cancelled: throw OrchardError(.orderNotOpen, "this order was cancelled")
    }
}
