import ApplePay
import Foundation
import Hummingbird
import OrchardCore
import OrchardServices

/// `GET /api/checkout`: what the page needs before it builds a cart: the products, the
/// merchant identifier for `applePayCapabilities`, where Apple's SDK is, and, in the demo
/// only, where the simulated sheet is.
struct CheckoutController {
    /// Where Apple's JS SDK comes from (`checkout.applePaySDK`), nil for none.
    let applePaySDK: URL?
    /// How the page loads the SDK and pays (`checkout`).
    let page: CheckoutPageSettings
    let simulator: (any SimulatedApplePay)?

    struct Product: Encodable {
        var id: String
        var label: String
        /// Decimal string in the catalogue's currency.
        var price: String
    }

    struct Settings: ResponseEncodable {
        var merchantIdentifier: String
        var displayName: String
        var currencyCode: String
        var products: [Product]
        var applePaySDK: String?
        var applePaySDKIntegrity: String?
        var applePaySDKTimeoutMs: Int
        /// `session` or `paymentrequest`: the browser API the page pays through.
        var applePayMode: String
        /// The demo's `ApplePaySession` test double (an ES module), absent outside the demo.
        var simulatedSheet: String?
        /// Google Pay, when the merchant takes it: what the page hands `pay.js`.
        var googlePay: GooglePayPageSettings?
    }

    /// The routes the router adds.
    var routes: RouteCollection<OrchardRequestContext> {
        let router = RouteCollection(context: OrchardRequestContext.self)
        router.get("/api/checkout") { _, context in
            let (merchant, _) = try context.requireMerchant()
            guard let catalogue = merchant.catalogue, let currency = Currency(code: catalogue.currency) else {
                throw OrchardError(.ordersUnavailable, "this shop takes no orders (no catalogue configured)")
            }
            // With the demo's stand-in SDK, the page loads it and the session comes from it, as outside Safari.
            let standIn = simulator?.files[SimulatedSheetController.standInSDKName] != nil
            let settings = Settings(
                merchantIdentifier: merchant.merchantIdentifier, displayName: merchant.displayName, currencyCode: catalogue.currency,
                products: catalogue.products.map {
                    Product(id: $0.id, label: $0.label, price: Money(minorUnits: $0.price, currency: currency).decimalString)
                },
                applePaySDK: standIn ? SimulatedSheetController.standInSDKPath : applePaySDK?.absoluteString,
                applePaySDKIntegrity: standIn ? nil : page.integrity,
                applePaySDKTimeoutMs: page.timeoutMilliseconds,
                applePayMode: page.mode.rawValue,
                simulatedSheet: simulator == nil || standIn ? nil : SimulatedSheetController.scriptPath,
                googlePay: merchant.googlePay.map { GooglePayPageSettings($0, scriptTimeoutMs: page.timeoutMilliseconds) })
            return settings
        }
        return router
    }
}
