import Foundation
import OrchardTesting
import Testing

@testable import ApplePay

/// Every amount Orchard takes from outside (a shop's cart, a quote answer, a catalogue, an
/// agreement) runs through bound checks that never trap: random and edge `Int64` values go in,
/// and each is refused with an error or accepted with exactly the arithmetic an `Int128` gives.
@Suite("Amount bounds: nothing traps, whatever Int64 comes in")
struct AmountBoundsTests {
    static let maximum = Money.maximumMinorUnits

    /// The values where arithmetic breaks, and the bounds either side.
    static let edges: [Int64] = [
        .min, .min + 1, -maximum - 1, -maximum, -1, 0, 1, 2, maximum - 1, maximum, maximum + 1, .max / 2, .max - 1, .max,
        -(.max / 2), 1 << 62, -(1 << 62), 1 << 32,
    ]

    /// Edges, then random values (half anywhere in Int64, half near the bounds), from a fixed seed so
    /// a failure repeats.
    static func values(count: Int = 400, seed: UInt64 = 0x5EED_0A11) -> [Int64] {
        var random = SplitMix64(seed: seed)
        var values = edges
        for index in 0..<count {
            let raw = Int64(bitPattern: random.next())
            values.append(index.isMultiple(of: 2) ? raw : raw % (maximum * 3))
        }
        return values
    }

    static let eur = Currency(code: "EUR")!

    static func cart(amount: Int64, lines: [Int64] = [], shipping: [Int64] = []) -> ShopCart {
        ShopCart(
            currency: "EUR", countryCode: "FR", amount: amount,
            lines: lines.enumerated().map { ShopCart.Line(label: "line \($0.offset)", amount: $0.element) },
            shippingMethods: shipping.enumerated().map {
                Catalogue.ShippingMethod(identifier: "m\($0.offset)", label: "Method \($0.offset)", detail: "", amount: $0.element)
            })
    }

    @Test("a cart's amount, each line and the lines' sum: refused or exact, never a trap")
    func cartLines() {
        let values = Self.values()
        for (index, value) in values.enumerated() {
            // A line of `value` and a balancing line: accepted only when both are within bounds and
            // they add up to the amount.
            let other = values[(index * 7 + 3) % values.count]
            let exactSum = Int128(value) + Int128(other)
            let amount = Int64(clamping: exactSum)
            let cart = Self.cart(amount: amount, lines: [value, other])
            let accepted = (try? cart.validated()) != nil
            let expected =
                Money.isBoundedAmount(value) && Money.isBoundedAmount(other) && Int128(amount) == exactSum
                && (1...Int128(Self.maximum)).contains(exactSum)
            #expect(accepted == expected, "lines \(value) + \(other) for \(amount)")
            // The amount alone.
            #expect(((try? Self.cart(amount: value).validated()) != nil) == (1...Self.maximum).contains(value), "amount \(value)")
        }
    }

    @Test("shipping: the amount plus any method stays within the bound, and pricing adds it exactly")
    func shipping() throws {
        for value in Self.values() {
            for amount in [Int64(1), 1000, Self.maximum - 10, Self.maximum] {
                let cart = Self.cart(amount: amount, shipping: [value])
                let exact = Int128(amount) + Int128(value)
                let expected = value >= 0 && exact <= Int128(Self.maximum)
                let validated = try? cart.validated()
                #expect((validated != nil) == expected, "amount \(amount) + shipping \(value)")
                if let validated {
                    let priced = try validated.price(shippingMethodId: "m0")
                    #expect(Int128(priced.total) == exact)
                }
            }
        }
    }

    @Test("decimal strings of every Int64, and parsing back what is within the bound")
    func money() {
        for value in Self.values() {
            for code in ["EUR", "JPY", "BHD"] {
                let currency = Currency(code: code)!
                let text = Money(minorUnits: value, currency: currency).decimalString
                #expect(text.hasPrefix("-") == (value < 0))
                // The digits are the magnitude's, whatever the sign (Int64.min included).
                #expect(text.filter(\.isNumber).drop(while: { $0 == "0" }) == String(value.magnitude).drop(while: { $0 == "0" }))
                if (0...Self.maximum).contains(value) { #expect(Money.minorUnits(text, currency: currency) == value) }
            }
        }
    }

    @Test("sums: exact, or nil where Int64 would overflow")
    func sums() {
        let values = Self.values(count: 200)
        for index in values.indices {
            let slice = [values[index], values[(index + 1) % values.count], values[(index + 5) % values.count]]
            let exact = slice.reduce(Int128(0)) { $0 + Int128($1) }
            let partials = slice.indices.map { slice[...$0].reduce(Int128(0)) { $0 + Int128($1) } }
            let fits = partials.allSatisfy { $0 >= Int128(Int64.min) && $0 <= Int128(Int64.max) }
            #expect(Money.sum(slice).map { Int128($0) } == (fits ? exact : nil), "\(slice)")
        }
    }

    @Test("catalogue prices, shipping and coupons: bounded, and pricing 99 of 50 lines never traps")
    func catalogue() throws {
        for value in Self.values(count: 100) {
            let catalogue = Catalogue(
                countryCode: "FR", currency: "EUR", supportedNetworks: ["visa"],
                products: (0..<50).map { .init(id: "p\($0)", label: "P\($0)", price: value) },
                shippingMethods: [.init(identifier: "post", label: "Post", detail: "", amount: value)], shippingCountries: ["FR"],
                coupons: [.init(code: "OFF", percentOff: nil, amountOff: value, expiresAt: nil)])
            guard let valid = try? catalogue.validated() else {
                #expect(!Money.isPositiveAmount(value), "price \(value) was refused")
                continue
            }
            #expect(Money.isPositiveAmount(value))
            let items = (0..<50).map { CartItem(productId: "p\($0)", quantity: 99) }
            let exact = Int128(value) * 50 * 99 - min(Int128(value), Int128(value) * 50 * 99) + Int128(value)
            do {
                let order = try Pricing.price(items: items, catalogue: valid, couponCode: "OFF", at: Date())
                #expect(Int128(order.total) == exact)
            } catch {
                #expect(error.code == .invalidCart && exact > Int128(Self.maximum), "\(value): \(error)")
            }
        }
    }

    @Test("agreements: billing and threshold amounts bounded without arithmetic")
    func agreements() {
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        for value in Self.values(count: 100) {
            let reload = PaymentAgreement(
                type: .automaticReload, paymentDescription: "Top-up", managementURL: "https://shop.example/account",
                automaticReloadBilling: .init(label: "Top-up", amount: value, thresholdAmount: value))
            let recurring = PaymentAgreement(
                type: .recurring, paymentDescription: "Tea", managementURL: "https://shop.example/account",
                regularBilling: .init(label: "Monthly", amount: value, intervalUnit: .month, intervalCount: 1))
            let fits = Money.isPositiveAmount(value)
            #expect(((try? reload.check(now: now)) != nil) == fits, "reload \(value)")
            #expect(((try? recurring.check(now: now)) != nil) == fits, "recurring \(value)")
        }
    }
}
