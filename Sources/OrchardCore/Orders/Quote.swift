import ApplePay
import Foundation

/// What Orchard asks the shop's quote URL when the shopper changes the sheet: the request, the
/// address (as Apple Pay reveals it before payment), the chosen method and coupon.
public struct QuoteRequest: Codable, Sendable, Equatable {

    public var paymentRequestId: String
    public var reference: String
    public var metadata: [String: String]
    public var currency: String
    /// The amount the request was created with.
    public var amount: Int64
    /// As much of the address as Apple Pay reveals before payment.
    public var shippingContact: RedactedAddress?
    public var shippingMethod: String?
    public var couponCode: String?

    public init(
        paymentRequestId: String, reference: String, metadata: [String: String], currency: String, amount: Int64,
        shippingContact: RedactedAddress?, shippingMethod: String?, couponCode: String?
    ) {
        self.paymentRequestId = paymentRequestId
        self.reference = reference
        self.metadata = metadata
        self.currency = currency
        self.amount = amount
        self.shippingContact = shippingContact
        self.shippingMethod = shippingMethod
        self.couponCode = couponCode
    }
}

/// The shop's answer: the goods' new amount and lines, the shipping methods for the address
/// (absent: the request's own), the method to select, the coupon it applied, and Apple Pay
/// errors to show (an unserviceable address, an invalid coupon).
public struct QuoteAnswer: Codable, Sendable, Equatable {
    public struct Method: Codable, Sendable, Equatable {
        public var identifier: String
        public var label: String
        public var detail: String?
        public var amount: Int64
    }

    public var amount: Int64
    public var lineItems: [ShopCart.Line]?
    public var shippingMethods: [Method]?
    public var shippingMethod: String?
    public var couponCode: String?
    public var errors: [ApplePayErrorItem]?

    /// The request's cart as the shop re-priced it, checked like a new request.
    public func cart(replacing cart: ShopCart) throws(ApplePayError) -> ShopCart {
        var quoted = cart
        quoted.amount = amount
        quoted.lines = lineItems ?? []
        if let shippingMethods {
            quoted.shippingMethods = shippingMethods.map {
                Catalogue.ShippingMethod(identifier: $0.identifier, label: $0.label, detail: $0.detail ?? "", amount: $0.amount)
            }
        }
        return try quoted.validated()
    }
}
