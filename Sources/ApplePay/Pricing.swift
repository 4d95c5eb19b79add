import Foundation

/// What a shop sells, in one currency: products, shipping methods and coupons.
public struct Catalogue: Sendable, Codable {
    public struct Product: Sendable, Codable {
        public var id: String
        public var label: String
        /// Price in minor units.
        public var price: Int64
    }

    public struct ShippingMethod: Sendable, Codable, Equatable {
        public var identifier: String
        public var label: String
        public var detail: String
        /// Price in minor units.
        public var amount: Int64
        /// ISO 3166 country codes it ships to; all serviceable countries when absent.
        public var countries: [String]?

        public init(identifier: String, label: String, detail: String, amount: Int64, countries: [String]? = nil) {
            self.identifier = identifier
            self.label = label
            self.detail = detail
            self.amount = amount
            self.countries = countries
        }
    }

    public struct Coupon: Sendable, Codable {
        public var code: String
        /// Whole percent off the subtotal (1–100), or
        public var percentOff: Int?
        /// a fixed amount off in minor units.
        public var amountOff: Int64?
        public var expiresAt: Date?
    }

    /// The merchant's country (Apple Pay's `countryCode`).
    public var countryCode: String
    /// ISO 4217 alphabetic code.
    public var currency: String
    public var supportedNetworks: [String]
    public var products: [Product]
    public var shippingMethods: [ShippingMethod]
    /// Countries the shop ships to.
    public var shippingCountries: [String]
    public var coupons: [Coupon]

    /// Checks what the JSON cannot: a known currency, unique ids, sane prices.
    public func validated() throws(ApplePayError) -> Catalogue {
        guard Currency(code: currency) != nil else {
            throw ApplePayError(.invalidCatalogue, "catalogue currency \(currency) is not a known ISO 4217 code")
        }
        guard Set(products.map(\.id)).count == products.count, Set(shippingMethods.map(\.identifier)).count == shippingMethods.count
        else { throw ApplePayError(.invalidCatalogue, "product ids and shipping method identifiers must be unique") }
        // Bounded here, a line (price × 99), a subtotal (50 lines) and a percentage of it stay far
        // inside Int64: pricing never traps.
        guard products.allSatisfy({ Money.isPositiveAmount($0.price) }),
            shippingMethods.allSatisfy({ (0...Money.maximumMinorUnits).contains($0.amount) }), !shippingMethods.isEmpty
        else {
            throw ApplePayError(
                .invalidCatalogue,
                "prices must be 1 to \(Money.maximumMinorUnits) minor units, shipping amounts 0 to that, and one shipping method must exist"
            )
        }
        for coupon in coupons
        where (coupon.percentOff == nil) == (coupon.amountOff == nil) || !(1...100).contains(coupon.percentOff ?? 1)
            || !Money.isPositiveAmount(coupon.amountOff ?? 1)
        {
            throw ApplePayError(
                .invalidCatalogue,
                "coupon \(coupon.code) needs exactly one of percentOff (1–100) or an amountOff of 1 to \(Money.maximumMinorUnits)")
        }
        return self
    }
}

/// A cart line as the page sends it.
public struct CartItem: Sendable, Codable, Equatable {
    public var productId: String
    public var quantity: Int

    public init(productId: String, quantity: Int) {
        self.productId = productId
        self.quantity = quantity
    }
}

/// An order priced by the server: the only numbers Orchard ever charges.
public struct PricedOrder: Sendable, Codable, Equatable {
    public struct Line: Sendable, Codable, Equatable {
        public init(productId: String, label: String, quantity: Int, unitPrice: Int64, amount: Int64) {
            self.productId = productId
            self.label = label
            self.quantity = quantity
            self.unitPrice = unitPrice
            self.amount = amount
        }

        public var productId: String
        public var label: String
        public var quantity: Int
        public var unitPrice: Int64
        public var amount: Int64
    }

    public var currency: String
    public var lines: [Line]
    public var items: [CartItem]
    public var subtotal: Int64
    /// Nil only for a shop-priced cart that ships nothing.
    public var shippingMethod: Catalogue.ShippingMethod?
    public var couponCode: String?
    public var discount: Int64
    public var shippingCountry: String?
    /// The rest of the address Apple Pay reveals before payment, for a shop that prices by it.
    public var shippingAddress: RedactedAddress?
    public var total: Int64
    /// What the payment sets up beyond itself (a shop-priced cart only): the first payment then
    /// stores the credential for the agreement's later charges.
    public var agreement: PaymentAgreement?
    /// How the payment is captured (a shop-priced cart's ``ShopCart/capture``); nil: manual.
    public var capture: CaptureMode?

    public init(
        currency: String, lines: [Line], items: [CartItem], subtotal: Int64, shippingMethod: Catalogue.ShippingMethod?,
        couponCode: String?, discount: Int64, shippingCountry: String?, total: Int64
    ) {
        self.currency = currency
        self.lines = lines
        self.items = items
        self.subtotal = subtotal
        self.shippingMethod = shippingMethod
        self.couponCode = couponCode
        self.discount = discount
        self.shippingCountry = shippingCountry
        self.total = total
    }
}

/// The shipping address as Apple Pay JS gives it before the shopper pays: enough to price
/// delivery, never a street or a name.
public struct RedactedAddress: Sendable, Codable, Equatable {
    public var countryCode: String?
    public var postalCode: String?
    public var locality: String?
    public var administrativeArea: String?

    public init(countryCode: String?, postalCode: String? = nil, locality: String? = nil, administrativeArea: String? = nil) {
        self.countryCode = countryCode
        self.postalCode = postalCode
        self.locality = locality
        self.administrativeArea = administrativeArea
    }
}

/// Server-side pricing, in integer minor units.
public enum Pricing {
    public static let maximumLines = 50
    public static let maximumQuantity = 99

    /// Prices a cart. `shippingMethodId` nil picks the first method available for the country.
    public static func price(
        items: [CartItem], catalogue: Catalogue, shippingMethodId: String? = nil, couponCode: String? = nil,
        shippingCountry: String? = nil, at now: Date
    ) throws(ApplePayError) -> PricedOrder {
        guard !items.isEmpty, items.count <= maximumLines else {
            throw ApplePayError(.invalidCart, "a cart holds 1 to \(maximumLines) lines")
        }
        var lines: [PricedOrder.Line] = []
        for item in items {
            guard (1...maximumQuantity).contains(item.quantity) else {
                throw ApplePayError(.invalidCart, "quantity must be 1 to \(maximumQuantity)")
            }
            guard let product = catalogue.products.first(where: { $0.id == item.productId }) else {
                throw ApplePayError(.unknownProduct, "there is no product \(item.productId.prefix(64))")
            }
            lines.append(
                .init(
                    productId: product.id, label: product.label, quantity: item.quantity, unitPrice: product.price,
                    amount: product.price * Int64(item.quantity)))
        }
        let country = shippingCountry?.uppercased()
        if let country, !catalogue.shippingCountries.contains(country) {
            throw ApplePayError(.addressUnserviceable, "we do not ship to \(country.prefix(8))")
        }
        let method = try chooseShippingMethod(
            shippingMethodId, from: availableShippingMethods(catalogue: catalogue, country: country), country: country)
        let subtotal = lines.reduce(0) { $0 + $1.amount }
        var discount: Int64 = 0
        var appliedCoupon: String?
        if let code = couponCode?.trimmingCharacters(in: .whitespaces), !code.isEmpty {
            guard let coupon = catalogue.coupons.first(where: { $0.code.caseInsensitiveCompare(code) == .orderedSame }) else {
                throw ApplePayError(.couponInvalid, "coupon code \(code.prefix(32)) is not valid")
            }
            if let expiry = coupon.expiresAt, now >= expiry {
                throw ApplePayError(.couponExpired, "coupon code \(coupon.code) has expired")
            }
            if let percent = coupon.percentOff {
                discount = subtotal * Int64(percent) / 100  // rounds down: the shopper never pays more than the rate
            } else if let amount = coupon.amountOff {
                discount = min(amount, subtotal)
            }
            appliedCoupon = coupon.code
        }
        let total = subtotal - discount + method.amount
        guard (0...Money.maximumMinorUnits).contains(total) else {
            throw ApplePayError(.invalidCart, "the order's total must be at most \(Money.maximumMinorUnits) minor units")
        }
        return PricedOrder(
            currency: catalogue.currency, lines: lines, items: items, subtotal: subtotal, shippingMethod: method,
            couponCode: appliedCoupon, discount: discount, shippingCountry: country, total: total)
    }

    /// The method `id` names among those `available`, or the first when `id` is nil.
    static func chooseShippingMethod(_ id: String?, from available: [Catalogue.ShippingMethod], country: String?)
        throws(ApplePayError) -> Catalogue.ShippingMethod
    {
        if let id {
            guard let chosen = available.first(where: { $0.identifier == id }) else {
                throw ApplePayError(.unknownShippingMethod, "shipping method \(id.prefix(64)) is not available")
            }
            return chosen
        }
        guard let first = available.first else {
            throw ApplePayError(.addressUnserviceable, "no shipping method serves \(country?.prefix(8) ?? "this address")")
        }
        return first
    }

    public static func availableShippingMethods(catalogue: Catalogue, country: String?) -> [Catalogue.ShippingMethod] {
        catalogue.shippingMethods.filter { method in
            guard let country, let countries = method.countries else { return true }
            return countries.contains(country)
        }
    }
}
