import Foundation

/// Apple Pay JS's `ApplePayLineItem`.
public struct ApplePayLineItem: Sendable, Codable, Equatable {
    public var label: String
    /// A decimal string in the currency's exponent.
    public var amount: String
    public var type: String
    /// `immediate` (absent), `recurring`, `deferred` or `automaticReload`; the fields below go with it.
    /// Dates are ISO-8601 strings here: the page turns them into JavaScript `Date`s, which Apple Pay JS requires.
    public var paymentTiming: String? = nil
    public var recurringPaymentStartDate: String? = nil
    public var recurringPaymentIntervalUnit: String? = nil
    public var recurringPaymentIntervalCount: Int? = nil
    public var recurringPaymentEndDate: String? = nil
    public var deferredPaymentDate: String? = nil
    public var automaticReloadPaymentThresholdAmount: String? = nil
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
    /// Absent unless the shop asked for billing details (a payments-API request).
    public var requiredBillingContactFields: [String]?
    /// Whether the sheet offers a coupon field (Apple Pay JS version 12 and later).
    public var supportsCouponCode: Bool
    /// The coupon already applied, shown prefilled on the sheet.
    public var couponCode: String?
    /// Base64; the token carries SHA-256 of its bytes in `header.applicationData`.
    public var applicationData: String
    /// At most one of these, from the payment's ``PaymentAgreement`` (``setAgreement(_:)``).
    public var recurringPaymentRequest: ApplePayRecurringPaymentRequest?
    public var deferredPaymentRequest: ApplePayDeferredPaymentRequest?
    public var automaticReloadPaymentRequest: ApplePayAutomaticReloadPaymentRequest?

    public init(order: PricedOrder, catalogue: Catalogue, displayName: String, applicationData: [UInt8]) {
        self.init(
            order: order, countryCode: catalogue.countryCode, supportedNetworks: catalogue.supportedNetworks,
            shippingMethods: Self.shippingMethods(
                order, available: Pricing.availableShippingMethods(catalogue: catalogue, country: order.shippingCountry)),
            requiredShippingContactFields: ["postalAddress", "name", "email"], supportsCouponCode: !catalogue.coupons.isEmpty,
            displayName: displayName, applicationData: applicationData)
    }

    /// A request from its parts: the catalogue's page and the payments API build theirs this way.
    public init(
        order: PricedOrder, countryCode: String, supportedNetworks: [String], shippingMethods: [ApplePayShippingMethod],
        requiredShippingContactFields: [String], requiredBillingContactFields: [String]? = nil, supportsCouponCode: Bool,
        displayName: String, applicationData: [UInt8]
    ) {
        self.countryCode = countryCode
        currencyCode = order.currency
        self.supportedNetworks = supportedNetworks
        merchantCapabilities = ["supports3DS"]
        total = Self.total(order, displayName: displayName)
        lineItems = Self.lineItems(order)
        self.shippingMethods = shippingMethods
        self.requiredShippingContactFields = requiredShippingContactFields
        self.requiredBillingContactFields = requiredBillingContactFields
        self.supportsCouponCode = supportsCouponCode
        couponCode = order.couponCode
        self.applicationData = Data(applicationData).base64EncodedString()
    }

    static func money(_ minorUnits: Int64, _ order: PricedOrder) -> String {
        // A stored order's currency was checked when it was made; one a later release added and an
        // older one reads back is shown with two decimals rather than trapping.
        let currency = Currency(code: order.currency) ?? Currency(code: order.currency, numericCode: "000", exponent: 2)
        return Money(minorUnits: minorUnits, currency: currency).decimalString
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
        if let method = order.shippingMethod {
            items.append(ApplePayLineItem(label: method.label, amount: money(method.amount, order), type: "final"))
        }
        return items
    }

    /// The methods `available` for the order's country, the selected one first (Apple Pay preselects the first).
    public static func shippingMethods(_ order: PricedOrder, available: [Catalogue.ShippingMethod]) -> [ApplePayShippingMethod] {
        let selected = order.shippingMethod?.identifier
        let ordered = available.filter { $0.identifier == selected } + available.filter { $0.identifier != selected }
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
    /// The order's price version after this update: a Google Pay payment names the version its
    /// sheet showed. Apple Pay JS ignores it.
    public var priceVersion: Int?

    /// `shippingMethods`: the methods available at the order's address, when the sheet should show them anew.
    public init(order: PricedOrder, displayName: String, shippingMethods: [Catalogue.ShippingMethod]?, errors: [ApplePayErrorItem] = []) {
        newTotal = ApplePayPaymentRequest.total(order, displayName: displayName)
        newLineItems = ApplePayPaymentRequest.lineItems(order)
        newShippingMethods = shippingMethods.map { ApplePayPaymentRequest.shippingMethods(order, available: $0) }
        self.errors = errors
    }
}
