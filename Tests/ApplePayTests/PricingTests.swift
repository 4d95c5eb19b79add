import Foundation
import Testing

@testable import ApplePay

@Suite("Money and server-side pricing")
struct PricingTests {
    @Test(
        "decimal strings follow the currency's exponent",
        arguments: [
            ("EUR", 1234, "12.34"), ("EUR", 5, "0.05"), ("EUR", 0, "0.00"), ("EUR", -250, "-2.50"), ("JPY", 1200, "1200"),
            ("BHD", 1250, "1.250"), ("KWD", 7, "0.007"),
        ])
    func decimals(code: String, minor: Int64, text: String) throws {
        #expect(Money(minorUnits: minor, currency: try #require(Currency(code: code))).decimalString == text)
    }

    @Test(
        "decimal strings parse back to minor units only in the currency's exact exponent",
        arguments: [
            ("EUR", "12.34", 1234), ("EUR", "0.05", 5), ("JPY", "1200", 1200), ("BHD", "1.250", 1250), ("EUR", "12.3", nil),
            ("EUR", "12", nil), ("EUR", "-1.00", nil), ("EUR", "+1.00", nil), ("EUR", "1.000", nil), ("EUR", " 1.00", nil),
            ("EUR", "1e2", nil), ("EUR", ".50", nil), ("JPY", "12.00", nil), ("EUR", "", nil), ("EUR", "1234567890123456.00", nil),
        ] as [(String, String, Int64?)])
    func parsing(code: String, text: String, minor: Int64?) throws {
        let currency = try #require(Currency(code: code))
        #expect(Money.minorUnits(text, currency: currency) == minor)
        if let minor { #expect(Money(minorUnits: minor, currency: currency).decimalString == text) }
    }

    @Test("numeric codes match what decrypted tokens carry")
    func numericCodes() {
        #expect(Currency(code: "EUR")?.numericCode == "978")
        #expect(Currency(code: "usd")?.numericCode == "840")
        #expect(Currency(code: "XXX") == nil)
    }

    static let catalogue = try! Catalogue(
        countryCode: "FR", currency: "EUR", supportedNetworks: ["visa", "masterCard"],
        products: [.init(id: "apple", label: "Apple", price: 199), .init(id: "pear", label: "Pear", price: 333)],
        shippingMethods: [
            .init(identifier: "standard", label: "Standard", detail: "3–5 days", amount: 490, countries: nil),
            .init(identifier: "express", label: "Express", detail: "Tomorrow", amount: 990, countries: ["FR"]),
        ],
        shippingCountries: ["FR", "DE"],
        coupons: [
            .init(code: "TENOFF", percentOff: 10, amountOff: nil, expiresAt: nil),
            .init(code: "OLD", percentOff: nil, amountOff: 100, expiresAt: Date(timeIntervalSince1970: 1_000_000_000)),
        ]
    ).validated()

    @Test("totals: lines, shipping, percent coupon rounding down")
    func totals() throws {
        let order = try Pricing.price(
            items: [.init(productId: "apple", quantity: 3), .init(productId: "pear", quantity: 1)], catalogue: Self.catalogue,
            couponCode: "tenoff", at: Date())
        #expect(order.subtotal == 930)
        #expect(order.discount == 93)
        #expect(order.total == 930 - 93 + 490)
        #expect(order.couponCode == "TENOFF")
        let request = ApplePayPaymentRequest(order: order, catalogue: Self.catalogue, displayName: "Shop", applicationData: [1, 2])
        #expect(request.total.amount == "13.27")
        #expect(request.merchantCapabilities == ["supports3DS"])
        #expect(request.lineItems.map(\.amount) == ["5.97", "3.33", "-0.93", "4.90"])
        #expect(request.applicationData == "AQI=")
    }

    @Test("shipping country and method change the total; errors are Apple Pay errors")
    func shipping() throws {
        let items = [CartItem(productId: "apple", quantity: 1)]
        let express = try Pricing.price(
            items: items, catalogue: Self.catalogue, shippingMethodId: "express", shippingCountry: "fr", at: Date())
        #expect(express.total == 199 + 990)
        #expect {
            _ = try Pricing.price(items: items, catalogue: Self.catalogue, shippingMethodId: "express", shippingCountry: "DE", at: Date())
        } throws: { ($0 as? ApplePayError)?.code == .unknownShippingMethod }
        do {
            _ = try Pricing.price(items: items, catalogue: Self.catalogue, shippingCountry: "US", at: Date())
            Issue.record("US should be unserviceable")
        } catch {
            #expect(ApplePayErrorItem(error)?.code == "addressUnserviceable")
        }
        do {
            _ = try Pricing.price(items: items, catalogue: Self.catalogue, couponCode: "OLD", at: Date())
            Issue.record("OLD should be expired")
        } catch {
            #expect(ApplePayErrorItem(error)?.code == "couponCodeExpired")
        }
    }

    @Test("bad carts are refused")
    func badCarts() {
        for items in [
            [], [CartItem(productId: "apple", quantity: 0)], [CartItem(productId: "apple", quantity: 100)],
            [CartItem(productId: "kiwi", quantity: 1)],
        ] {
            #expect(throws: ApplePayError.self) { _ = try Pricing.price(items: items, catalogue: Self.catalogue, at: Date()) }
        }
    }
}
