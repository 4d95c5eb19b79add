import Foundation

/// Apple Pay JS's `ApplePayLineItem`.
public struct ApplePayLineItem: Sendable, Codable, Equatable {
    public var label: String
    /// A decimal string in the currency's exponent.
    public var amount: String
    public var type: String
}

/// Apple Pay JS's `ApplePayShippingMethod`.
public struct ApplePayShippingMethod: Sendable, Codable, Equatable {
    public var label: String
    public var detail: String
    public var amount: String
    public var identifier: String
}

/// Apple Pay JS's `ApplePayError`, as the page passes it to a `complete…` call.
public struct ApplePayErrorItem: Sendable, Codable, Equatable {
    public var code: String
    public var contactField: String?
    public var message: String

    public init(code: String, contactField: String? = nil, message: String) {
        self.code = code
        self.contactField = contactField
        self.message = message
    }

    /// The Apple Pay error for a pricing failure the shopper can fix on the sheet.
    public init?(_ error: ApplePayError) {
        switch error.code {
        case .addressUnserviceable: self.init(code: "addressUnserviceable", contactField: "countryCode", message: error.message)
        case .couponInvalid: self.init(code: "couponCodeInvalid", message: error.message)
        case .couponExpired: self.init(code: "couponCodeExpired", message: error.message)
        default: return nil
        }
    }
}

/// The payment request the page hands to `new ApplePaySession(version, request)`, built
/// only from the server's priced order.
public struct ApplePayPaymentRequest: Sendable, Codable, Equatable {
    public var countryCode: String
    public var currencyCode: String
    public var supportedNetworks: [String]
    public var merchantCapabilities: [String]
    public var total: ApplePayLineItem
    public var lineItems: [ApplePayLineItem]
    public var shippingMethods: [ApplePayShippingMethod]
    public var requiredShippingContactFields: [String]
    /// Whether the sheet offers a coupon field (Apple Pay JS version 12 and later).
    public var supportsCouponCode: Bool
    /// The coupon already applied, shown prefilled on the sheet.
    public var couponCode: String?
    /// Base64; the token carries SHA-256 of its bytes in `header.applicationData`.
    public var applicationData: String

    public init(order: PricedOrder, catalogue: Catalogue, displayName: String, applicationData: [UInt8]) {
        countryCode = catalogue.countryCode
        currencyCode = order.currency
        supportedNetworks = catalogue.supportedNetworks
        merchantCapabilities = ["supports3DS"]
        total = Self.total(order, displayName: displayName)
        lineItems = Self.lineItems(order)
        shippingMethods = Self.shippingMethods(order, catalogue: catalogue)
        requiredShippingContactFields = ["postalAddress", "name", "email"]
        supportsCouponCode = !catalogue.coupons.isEmpty
        couponCode = order.couponCode
        self.applicationData = Data(applicationData).base64EncodedString()
    }

    static func money(_ minorUnits: Int64, _ order: PricedOrder) -> String {
        Money(minorUnits: minorUnits, currency: Currency(code: order.currency)!).decimalString
    }

    public static func total(_ order: PricedOrder, displayName: String) -> ApplePayLineItem {
        ApplePayLineItem(label: displayName, amount: money(order.total, order), type: "final")
    }

    public static func lineItems(_ order: PricedOrder) -> [ApplePayLineItem] {
        var items = order.lines.map { line in
            ApplePayLineItem(
                label: line.quantity == 1 ? line.label : "\(line.label) × \(line.quantity)", amount: money(line.amount, order),
                type: "final")
        }
        if order.discount > 0 {
            items.append(
                ApplePayLineItem(label: "Discount (\(order.couponCode ?? ""))", amount: money(-order.discount, order), type: "final"))
        }
        items.append(ApplePayLineItem(label: order.shippingMethod.label, amount: money(order.shippingMethod.amount, order), type: "final"))
        return items
    }

    /// The methods for the order's country, the selected one first (Apple Pay preselects the first).
    public static func shippingMethods(_ order: PricedOrder, catalogue: Catalogue) -> [ApplePayShippingMethod] {
        let available = Pricing.availableShippingMethods(catalogue: catalogue, country: order.shippingCountry)
        let ordered =
            available.filter { $0.identifier == order.shippingMethod.identifier }
            + available.filter {
                $0.identifier != order.shippingMethod.identifier
            }
        return ordered.map {
            ApplePayShippingMethod(label: $0.label, detail: $0.detail, amount: money($0.amount, order), identifier: $0.identifier)
        }
    }
}

/// The body of a `completeShippingContactSelection` / `completeShippingMethodSelection` /
/// `completeCouponCodeChange` update.
public struct ApplePayUpdate: Sendable, Codable, Equatable {
    public var newTotal: ApplePayLineItem
    public var newLineItems: [ApplePayLineItem]
    public var newShippingMethods: [ApplePayShippingMethod]?
    public var errors: [ApplePayErrorItem]

    public init(
        order: PricedOrder, catalogue: Catalogue, displayName: String, includeShippingMethods: Bool, errors: [ApplePayErrorItem] = []
    ) {
        newTotal = ApplePayPaymentRequest.total(order, displayName: displayName)
        newLineItems = ApplePayPaymentRequest.lineItems(order)
        newShippingMethods = includeShippingMethods ? ApplePayPaymentRequest.shippingMethods(order, catalogue: catalogue) : nil
        self.errors = errors
    }
}
