import ApplePay
import Foundation
import OrchardCore
import Testing

/// How orders are opened and what each sheet event changes: written once in Core.
@Suite("Orders: opening, the token binding, sheet changes")
struct OrderRulesTests {
    static let now = Date(timeIntervalSince1970: 1_800_000_000)
    static let method = Catalogue.ShippingMethod(identifier: "express", label: "Express", detail: "", amount: 500)
    static let priced = PricedOrder(
        currency: "EUR", lines: [], items: [CartItem(productId: "apple", quantity: 2)], subtotal: 990, shippingMethod: method,
        couponCode: "TEN", discount: 0, shippingCountry: "FR", total: 1_490)

    @Test("an opened order: fresh ID, open at version 1, bound to its tokens, expiring when told")
    func opened() {
        let order = OrderRecord.opened(merchantIdentifier: "merchant.shop", priced: Self.priced, at: Self.now, openFor: 600)
        let other = OrderRecord.opened(merchantIdentifier: "merchant.shop", priced: Self.priced, at: Self.now, openFor: 600)
        #expect(order.id != other.id && order.id.count == 32)
        #expect(order.state == .open && order.priceVersion == 1 && order.expiresAt == Self.now.addingTimeInterval(600))
        #expect(order.applicationData == Array("orchard-order:\(order.id)".utf8))
        #expect(OrderRecord.binding(orderId: "abc") == Array("orchard-order:abc".utf8))
    }

    @Test("each sheet event changes its own input and keeps the rest; a new address picks the method afresh")
    func sheetChanges() {
        let items = Self.priced.items
        #expect(
            SheetChange.shippingContact(country: "DE", of: Self.priced)
                == SheetChange(items: items, shippingMethod: nil, couponCode: "TEN", shippingCountry: "DE"))
        #expect(SheetChange.shippingContact(country: nil, of: Self.priced).shippingCountry == "")
        #expect(
            SheetChange.shippingMethod("standard", of: Self.priced)
                == SheetChange(items: items, shippingMethod: "standard", couponCode: "TEN", shippingCountry: "FR"))
        #expect(
            SheetChange.coupon("FIVE", of: Self.priced)
                == SheetChange(items: items, shippingMethod: "express", couponCode: "FIVE", shippingCountry: "FR"))
        #expect(
            SheetChange.unchanged(Self.priced)
                == SheetChange(items: items, shippingMethod: "express", couponCode: "TEN", shippingCountry: "FR"))
    }
}
