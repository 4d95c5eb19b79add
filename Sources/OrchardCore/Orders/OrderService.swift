import ApplePay
import Foundation

/// One event of the Apple Pay sheet that may change an open order's price.
public enum SheetEvent: Sendable, Equatable {
    /// A new shipping address, as much of it as Apple Pay reveals before payment.
    case shippingContact(RedactedAddress)
    case shippingMethod(String)
    case coupon(String)
    /// The card changed. No method changes the price today, but the page always shows what the
    /// server says, so a surcharge rule would slot in here.
    case paymentMethod

    /// A new address, each part clipped to 64 characters: the sheet's values are the shopper's
    /// browser's, and nothing longer is kept or sent to the shop.
    public static func shippingContact(countryCode: String?, postalCode: String?, locality: String?, administrativeArea: String?)
        -> SheetEvent
    {
        func clip(_ value: String?) -> String? { value.map { String($0.prefix(64)) } }
        return .shippingContact(
            RedactedAddress(
                countryCode: clip(countryCode), postalCode: clip(postalCode), locality: clip(locality),
                administrativeArea: clip(administrativeArea)))
    }

    /// What the event changes in `order`'s pricing inputs (``SheetChange`` says what each resets).
    public func change(of order: PricedOrder) -> SheetChange {
        switch self {
        case .shippingContact(let address): .shippingContact(country: address.countryCode, of: order)
        case .shippingMethod(let identifier): .shippingMethod(identifier, of: order)
        case .coupon(let code): .coupon(code, of: order)
        case .paymentMethod: .unchanged(order)
        }
    }

    /// Only an address change lists the shipping methods again: they depend on where it ships.
    var listsShippingMethods: Bool {
        if case .shippingContact = self { return true }
        return false
    }

    var address: RedactedAddress? {
        if case .shippingContact(let address) = self { return address }
        return nil
    }
}

/// Orders the shopper's page opens and reprices: every number comes from the merchant's
/// catalogue, the shop's payment request, or the shop's quote URL, never from the page. An order
/// is visible only to its own merchant.
public struct OrderService: Sendable {
    let orders: any OrderPayments
    /// The shop's payment requests an order may come from.
    let paymentRequests: any PaymentRequests
    /// The shops' quote URLs, for merchants that price sheet changes themselves; nil: none is asked.
    let quotes: QuoteClient?
    let time: TimeSource
    /// How long a catalogue order takes payments before it expires (and is purged later).
    let openFor: TimeInterval

    public init(
        orders: any OrderPayments, paymentRequests: any PaymentRequests, quotes: QuoteClient?, time: TimeSource, openFor: TimeInterval
    ) {
        self.orders = orders
        self.paymentRequests = paymentRequests
        self.quotes = quotes
        self.time = time
        self.openFor = openFor
    }

    /// The merchant's catalogue; a merchant without one takes no catalogue orders.
    public static func catalogue(of merchant: MerchantConfiguration) throws(CoreError) -> Catalogue {
        guard let catalogue = merchant.catalogue else {
            throw CoreError(.ordersUnavailable, "this shop takes no orders (no catalogue configured)")
        }
        return catalogue
    }

    /// Opens an order for `items` priced from the merchant's catalogue, and the payment request
    /// the page hands Apple Pay (bound to the order by its applicationData).
    public func create(items: [CartItem], merchant: MerchantConfiguration) async throws -> (
        order: OrderRecord, paymentRequest: ApplePayPaymentRequest
    ) {
        let catalogue = try Self.catalogue(of: merchant)
        let priced: PricedOrder
        do throws(ApplePayError) {
            priced = try Pricing.price(items: items, catalogue: catalogue, at: time.now)
        } catch {
            throw CoreError(.invalidCart, error.message)
        }
        // An abandoned order expires (and is purged later) instead of staying open for ever.
        let order = OrderRecord.opened(merchantIdentifier: merchant.merchantIdentifier, priced: priced, at: time.now, openFor: openFor)
        try await orders.insert(order)
        let paymentRequest = ApplePayPaymentRequest(
            order: priced, catalogue: catalogue, displayName: merchant.displayName, applicationData: order.applicationData)
        return (order, paymentRequest)
    }

    /// Reprices the open order `id` for a sheet event, as a compare-and-set on its price version.
    /// Shopper-fixable problems (an address nothing ships to, a bad coupon) come back as Apple
    /// Pay errors with the previous totals; anything else throws and changes nothing.
    public func update(orderId id: String, merchant: MerchantConfiguration, event: SheetEvent) async throws -> ApplePayUpdate {
        let order = try await openOrder(id: id, merchant: merchant)
        let change = event.change(of: order.priced)
        var updated = order
        var errors: [ApplePayErrorItem] = []
        let available: [Catalogue.ShippingMethod]
        var label = merchant.displayName
        if let request = try await paymentRequests.paymentRequest(id: order.id) {
            label = request.cart.totalLabel ?? label
            var cart = request.cart
            if let endpoint = merchant.quote, let quotes {
                let address = event.address ?? order.priced.shippingAddress ?? RedactedAddress(countryCode: change.shippingCountry)
                (cart, updated.priced, errors) = try await quoted(
                    request, order: order.priced, change: change, address: address, endpoint: endpoint, quotes: quotes)
            } else {
                (updated.priced, errors) = try reprice(cart, order: order.priced, change: change)
            }
            available = cart.shippingMethods(for: updated.priced.shippingCountry)
        } else {
            let catalogue = try Self.catalogue(of: merchant)
            (updated.priced, errors) = try reprice(catalogue, order: order.priced, change: change)
            available = Pricing.availableShippingMethods(catalogue: catalogue, country: updated.priced.shippingCountry)
        }
        var priceVersion = order.priceVersion
        if updated.priced != order.priced {
            do {
                let repriced = order.repriced(updated.priced)
                try await orders.updateOpen(repriced)
                priceVersion = repriced.priceVersion
            } catch let error as CoreError where error.code == .orderNotOpen {
                throw CoreError(.orderNotOpen, "this order is already paid")
            } catch let error as CoreError where error.code == .orderChanged {
                throw CoreError(.orderChanged, "the order changed meanwhile (another update or its payment); send this change again")
            }
        }
        var answer = ApplePayUpdate(
            order: updated.priced, displayName: label, shippingMethods: event.listsShippingMethods ? available : nil,
            errors: errors)
        answer.priceVersion = priceVersion
        return answer
    }

    /// The open order `id` of `merchant`; another merchant's order is "not found", never "forbidden".
    ///
    /// An order whose last payment attempt has an unknown outcome is payable but not repriceable:
    /// the retry must charge the same amount under the same reference.
    public func openOrder(id: String, merchant: MerchantConfiguration) async throws -> OrderRecord {
        guard RecordIdentifier.isLookup(id), let order = try await orders.order(id: id),
            order.merchantIdentifier == merchant.merchantIdentifier
        else {
            throw CoreError(.notFound, "there is no such order")
        }
        switch order.state {
        case .open:
            if let expiry = order.expiresAt, expiry <= time.now { throw CoreError(.orderNotOpen, "this payment request has expired") }
            return order
        case .expired: throw CoreError(.orderNotOpen, "this payment request has expired")
        case .pending, .unknown:
            throw CoreError(.orderNotOpen, "this order's payment is being confirmed; it cannot change now")
        case .paid: throw CoreError(.orderNotOpen, "this order is already paid")
        case .cancelled: throw CoreError(.orderNotOpen, "this order was cancelled")
        }
    }

    /// The catalogue's price for the change; a bad coupon is dropped but the rest of the change kept.
    func reprice(_ catalogue: Catalogue, order: PricedOrder, change: SheetChange) throws(CoreError) -> (
        PricedOrder, [ApplePayErrorItem]
    ) {
        let now = time.now
        do throws(ApplePayError) {
            return (
                try Pricing.price(
                    items: change.items, catalogue: catalogue, shippingMethodId: change.shippingMethod, couponCode: change.couponCode,
                    shippingCountry: change.shippingCountry, at: now),
                []
            )
        } catch {
            guard let item = ApplePayErrorItem(error) else { throw CoreError(.invalidRequest, error.message) }
            guard error.code == .couponInvalid || error.code == .couponExpired else { return (order, [item]) }
            let withoutCoupon = try? Pricing.price(
                items: change.items, catalogue: catalogue, shippingMethodId: change.shippingMethod,
                shippingCountry: change.shippingCountry, at: now)
            return (withoutCoupon ?? order, [item])
        }
    }

    /// The shop's cart with the shopper's choices: its own amount plus the chosen shipping method
    /// (nil after an address change: the first that ships there). Coupons are the shop's business.
    func reprice(_ cart: ShopCart, order: PricedOrder, change: SheetChange) throws(CoreError) -> (PricedOrder, [ApplePayErrorItem]) {
        if let coupon = change.couponCode, !coupon.isEmpty, coupon != order.couponCode {
            return (order, [ApplePayErrorItem(code: "couponCodeInvalid", message: "this shop takes no coupon codes here")])
        }
        do throws(ApplePayError) {
            return (try cart.price(shippingMethodId: change.shippingMethod, shippingCountry: change.shippingCountry), [])
        } catch {
            guard let item = ApplePayErrorItem(error) else { throw CoreError(.invalidRequest, error.message) }
            return (order, [item])
        }
    }

    /// The shop's own price for the change, from its quote URL: its amount, lines and methods, the
    /// method it selects (else the shopper's, else the first that ships) and its errors. Anything
    /// that does not check fails the update and keeps the old total.
    func quoted(
        _ request: PaymentRequestRecord, order: PricedOrder, change: SheetChange, address: RedactedAddress, endpoint: WebhookEndpoint,
        quotes: QuoteClient
    ) async throws(CoreError) -> (ShopCart, PricedOrder, [ApplePayErrorItem]) {
        let (method, country) = (change.shippingMethod, address.countryCode)
        let question = QuoteRequest(
            paymentRequestId: request.id, reference: request.reference, metadata: request.metadata, currency: request.cart.currency,
            amount: request.cart.amount, shippingContact: address, shippingMethod: method, couponCode: change.couponCode)
        let answer = try await quotes.quote(question, endpoint: endpoint, merchant: request.merchantIdentifier)
        let cart: ShopCart
        do throws(ApplePayError) {
            cart = try answer.cart(replacing: request.cart)
        } catch {
            throw quotes.failure("answered a cart that does not check: \(error.message)", question)
        }
        let offered = cart.shippingMethods(for: country?.uppercased())
        let chosen = [answer.shippingMethod, method].compactMap { $0 }.first { id in offered.contains { $0.identifier == id } }
        var priced: PricedOrder
        do throws(ApplePayError) {
            priced = try cart.price(shippingMethodId: chosen, shippingCountry: country)
        } catch {
            // Nothing ships there: the shop's errors (or Apple Pay's) with the old total.
            return (cart, order, answer.errors ?? ApplePayErrorItem(error).map { [$0] } ?? [])
        }
        priced.couponCode = answer.couponCode
        priced.shippingAddress = address
        return (cart, priced, answer.errors ?? [])
    }
}
