import ApplePay

/// What one payment sheet event changes in an order's pricing inputs; the rest is kept as the
/// order has it. The one place that says what each event resets.
public struct SheetChange: Sendable, Equatable {
    public var items: [CartItem]
    /// Nil: the first method that ships to the country.
    public var shippingMethod: String?
    public var couponCode: String?
    public var shippingCountry: String?

    public init(items: [CartItem], shippingMethod: String?, couponCode: String?, shippingCountry: String?) {
        self.items = items
        self.shippingMethod = shippingMethod
        self.couponCode = couponCode
        self.shippingCountry = shippingCountry
    }

    /// A new shipping address: its country (empty when the sheet gave none), and the method
    /// chosen afresh, since the old one may not ship there.
    public static func shippingContact(country: String?, of order: PricedOrder) -> SheetChange {
        SheetChange(items: order.items, shippingMethod: nil, couponCode: order.couponCode, shippingCountry: country ?? "")
    }

    public static func shippingMethod(_ identifier: String, of order: PricedOrder) -> SheetChange {
        SheetChange(items: order.items, shippingMethod: identifier, couponCode: order.couponCode, shippingCountry: order.shippingCountry)
    }

    public static func coupon(_ code: String, of order: PricedOrder) -> SheetChange {
        SheetChange(
            items: order.items, shippingMethod: order.shippingMethod?.identifier, couponCode: code, shippingCountry: order.shippingCountry)
    }

    /// Nothing changes but the order is priced again (a card change: a surcharge rule would apply here).
    public static func unchanged(_ order: PricedOrder) -> SheetChange {
        SheetChange(
            items: order.items, shippingMethod: order.shippingMethod?.identifier, couponCode: order.couponCode,
            shippingCountry: order.shippingCountry)
    }
}
