import Foundation

/// A cart the shop priced itself (the payments API): Orchard charges its `amount` plus the
/// shipping method the shopper picks, and shows the shop's lines on the sheet.
public struct ShopCart: Sendable, Codable, Equatable {
    /// One line on the sheet; a discount is a negative line.
    public struct Line: Sendable, Codable, Equatable {
        public var label: String
        /// Minor units.
        public var amount: Int64

        public init(label: String, amount: Int64) {
            self.label = label
            self.amount = amount
        }
    }

    /// ISO 4217 alphabetic code.
    public var currency: String
    /// The merchant's country (Apple Pay's `countryCode`).
    public var countryCode: String
    /// The goods, in minor units, before shipping.
    public var amount: Int64
    /// Empty: the sheet shows the total alone.
    public var lines: [Line]
    /// Empty: nothing ships (no address is asked for unless required below).
    public var shippingMethods: [Catalogue.ShippingMethod]
    public var requiredShippingContactFields: [String]
    public var requiredBillingContactFields: [String]
    public var supportedNetworks: [String]
    /// A recurring, deferred or automatic-reload agreement the payment sets up (Apple Pay JS 14+).
    public var agreement: PaymentAgreement?
    /// The total's label on the sheet (Apple Pay's `total.label`, Google Pay's `totalPriceLabel`):
    /// the event or shop the shopper pays, where one merchant sells for many; nil: the merchant's name.
    public var totalLabel: String?
    /// Who captures an authorized payment: Orchard at once (`automatic`) or the shop with
    /// `/capture` (`manual`); nil: manual, as before the choice existed.
    public var capture: CaptureMode?

    public static let maximumLines = 50
    public static let maximumShippingMethods = 20
    /// The largest amount accepted, in minor units (``Money/maximumMinorUnits``).
    public static let maximumAmount = Money.maximumMinorUnits
    /// Apple Pay JS's contact fields.
    public static let shippingContactFields: Set<String> = ["postalAddress", "name", "phoneticName", "phone", "email"]
    public static let billingContactFields: Set<String> = ["postalAddress", "name", "phoneticName"]
    /// Apple Pay JS's payment networks.
    public static let networks: Set<String> = [
        "amex", "bancomat", "bancontact", "cartesBancaires", "chinaUnionPay", "dankort", "discover", "eftpos", "electron", "elo",
        "girocard", "interac", "jcb", "mada", "maestro", "masterCard", "mir", "privateLabel", "visa", "vPay",
    ]
    public static let defaultNetworks = ["amex", "discover", "masterCard", "visa"]

    public init(
        currency: String, countryCode: String, amount: Int64, lines: [Line] = [], shippingMethods: [Catalogue.ShippingMethod] = [],
        requiredShippingContactFields: [String] = [], requiredBillingContactFields: [String] = [],
        supportedNetworks: [String] = ShopCart.defaultNetworks, agreement: PaymentAgreement? = nil
    ) {
        self.agreement = agreement
        self.currency = currency
        self.countryCode = countryCode
        self.amount = amount
        self.lines = lines
        self.shippingMethods = shippingMethods
        self.requiredShippingContactFields = requiredShippingContactFields
        self.requiredBillingContactFields = requiredBillingContactFields
        self.supportedNetworks = supportedNetworks
    }

    /// Checks everything the JSON cannot, each problem with its own message.
    public func validated() throws(ApplePayError) -> ShopCart {
        func refuse(_ message: String) -> ApplePayError { ApplePayError(.invalidCart, message) }
        guard Currency(code: currency) != nil, currency == currency.uppercased() else {
            throw refuse("currency must be an ISO 4217 code Orchard knows, in capitals (EUR, GBP, USD, …)")
        }
        guard Self.isCountry(countryCode) else { throw refuse("countryCode must be the merchant's ISO 3166 country, like GB") }
        guard Money.isPositiveAmount(amount) else {
            throw refuse("amount must be a whole number of minor units from 1 to \(Self.maximumAmount)")
        }
        guard lines.count <= Self.maximumLines else { throw refuse("at most \(Self.maximumLines) lineItems") }
        if let totalLabel, !Self.isLabel(totalLabel) { throw refuse("totalLabel must be 1–100 characters on one line") }
        for line in lines where !Self.isLabel(line.label) || !Money.isBoundedAmount(line.amount) {
            throw refuse("each line item needs a label of 1–100 characters and an amount of at most ±\(Self.maximumAmount) minor units")
        }
        // Bounded lines cannot overflow a sum, but it is checked anyway: nothing here traps.
        if !lines.isEmpty, let sum = Optional(Money.sum(lines.lazy.map(\.amount))), sum != amount {
            throw refuse("the lineItems add up to \(sum.map(String.init) ?? "more than Int64 holds"), not the amount \(amount)")
        }
        guard shippingMethods.count <= Self.maximumShippingMethods,
            Set(shippingMethods.map(\.identifier)).count == shippingMethods.count
        else { throw refuse("at most \(Self.maximumShippingMethods) shipping methods, each with its own identifier") }
        for method in shippingMethods {
            guard (1...64).contains(method.identifier.count), Self.isLabel(method.label), method.detail.count <= 100,
                (0...Self.maximumAmount).contains(method.amount), Money.isPositiveAmount(amount + method.amount),
                method.countries?.allSatisfy(Self.isCountry) ?? true
            else {
                throw refuse(
                    "shipping method \(method.identifier.prefix(64)) needs an identifier, a label, an amount ≥ 0 that keeps the total within \(Self.maximumAmount), and ISO 3166 countries"
                )
            }
        }
        guard requiredShippingContactFields.allSatisfy(Self.shippingContactFields.contains) else {
            throw refuse("requiredShippingContactFields takes \(Self.shippingContactFields.sorted().joined(separator: ", "))")
        }
        guard requiredBillingContactFields.allSatisfy(Self.billingContactFields.contains) else {
            throw refuse("requiredBillingContactFields takes \(Self.billingContactFields.sorted().joined(separator: ", "))")
        }
        guard !supportedNetworks.isEmpty, supportedNetworks.allSatisfy(Self.networks.contains) else {
            throw refuse("supportedNetworks takes \(Self.networks.sorted().joined(separator: ", "))")
        }
        return self
    }

    /// The methods that ship to `country` (all of them before the shopper picked an address).
    public func shippingMethods(for country: String?) -> [Catalogue.ShippingMethod] {
        shippingMethods.filter { method in
            guard let country, let countries = method.countries else { return true }
            return countries.contains(country)
        }
    }

    /// The cart with the chosen method (nil: the first one that ships to `shippingCountry`).
    public func price(shippingMethodId: String? = nil, shippingCountry: String? = nil) throws(ApplePayError) -> PricedOrder {
        let country = shippingCountry?.uppercased()
        let method =
            shippingMethods.isEmpty
            ? nil : try Pricing.chooseShippingMethod(shippingMethodId, from: shippingMethods(for: country), country: country)
        let priced = lines.enumerated().map { index, line in
            PricedOrder.Line(productId: "line-\(index + 1)", label: line.label, quantity: 1, unitPrice: line.amount, amount: line.amount)
        }
        var order = PricedOrder(
            currency: currency, lines: priced, items: [], subtotal: amount, shippingMethod: method, couponCode: nil, discount: 0,
            shippingCountry: country, total: Money.sum([amount, method?.amount ?? 0]) ?? .max)
        order.agreement = agreement
        order.capture = capture
        return order
    }

    /// The Apple Pay JS request for `order` (this cart priced); coupons only when the shop prices them.
    public func paymentRequest(_ order: PricedOrder, displayName: String, applicationData: [UInt8], supportsCoupons: Bool = false)
        -> ApplePayPaymentRequest
    {
        var request = ApplePayPaymentRequest(
            order: order, countryCode: countryCode, supportedNetworks: supportedNetworks,
            shippingMethods: ApplePayPaymentRequest.shippingMethods(order, available: shippingMethods(for: order.shippingCountry)),
            requiredShippingContactFields: requiredShippingContactFields,
            requiredBillingContactFields: requiredBillingContactFields.isEmpty ? nil : requiredBillingContactFields,
            supportsCouponCode: supportsCoupons, displayName: totalLabel ?? displayName, applicationData: applicationData)
        // The page sets tokenNotificationURL: only it knows the public address Orchard is reached at.
        if let agreement { request.setAgreement(agreement, tokenNotificationURL: nil) }
        return request
    }

    static func isCountry(_ code: String) -> Bool {
        code.utf8.count == 2 && code.utf8.allSatisfy { (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains($0) }
    }

    static func isLabel(_ label: String) -> Bool {
        (1...100).contains(label.count) && !label.contains(where: { $0.isNewline })
    }
}
