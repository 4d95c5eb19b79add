import ApplePay
import Foundation
import GooglePay
import Hummingbird
import OrchardCore

/// Routes of the demo's Google Pay stand-in under `/demo/`: its `pay.js` and the tokens its sheet
/// pays with, as Google's servers would give them for the `Host`'s merchant.
struct SimulatedGooglePayController {
    /// The largest body read (`server.maxBodyBytes`).
    let maxBodyBytes: Int
    let simulator: any SimulatedGooglePay

    /// What the stand-in sheet posts when the shopper pays: the total it shows, the card chosen.
    struct MintBody: Decodable {
        var amount: String
        var currencyCode: String
        /// Google's `cardNetwork` of the card chosen (default `VISA`).
        var cardNetwork: String?
        /// `CRYPTOGRAM_3DS` (the default) or `PAN_ONLY`.
        var authMethod: String?
    }

    /// Google's `PaymentData`, as `loadPaymentData` resolves with it.
    struct PaymentData: ResponseEncodable {
        var apiVersion = 2
        var apiVersionMinor = 0
        var paymentMethodData: PaymentMethodData

        struct PaymentMethodData: Encodable {
            var type = "CARD"
            var description: String
            var info: Info
            var tokenizationData: TokenizationData
        }

        struct Info: Encodable {
            var cardNetwork: String
            var cardDetails: String
        }

        struct TokenizationData: Encodable {
            var type: String
            var token: String
        }
    }

    /// The routes the router adds.
    var routes: RouteCollection<OrchardRequestContext> {
        let router = RouteCollection(context: OrchardRequestContext.self)
        SimulatedSheetController.serve(simulator.files, on: router)
        router.postJSON("/demo/google-pay-token") { request, context in
            let (merchant, _) = try context.requireMerchant()
            guard let settings = merchant.googlePay else {
                throw OrchardError(.notFound, "this merchant does not take Google Pay")
            }
            let bytes = try await readBody(request, limit: maxBodyBytes)
            guard let body = try? JSONDecoder().decode(MintBody.self, from: Data(bytes)) else {
                throw OrchardError(.invalidJSON, "the body must be {amount, currencyCode, cardNetwork?, authMethod?}")
            }
            // Google's token carries no amount: the total is checked only so that the sheet pays what it shows.
            guard let currency = Currency(code: body.currencyCode), Money.minorUnits(body.amount, currency: currency) != nil else {
                throw OrchardError(.invalidRequest, "amount must be a decimal string in the currency's exponent")
            }
            let network = body.cardNetwork ?? "VISA"
            guard let card = SimulatedGooglePayCard.testCards.first(where: { $0.network == network }) else {
                throw OrchardError(.invalidRequest, "cardNetwork must be one of \(SimulatedGooglePayCard.testCards.map(\.network))")
            }
            guard let authMethod = GooglePayPaymentData.AuthMethod(rawValue: body.authMethod ?? "CRYPTOGRAM_3DS") else {
                throw OrchardError(.invalidRequest, "authMethod must be CRYPTOGRAM_3DS or PAN_ONLY")
            }
            let token = try simulator.mintToken(for: settings, card: card, authMethod: authMethod)
            let name = network.prefix(1) + network.dropFirst().lowercased()
            return PaymentData(
                paymentMethodData: .init(
                    description: "\(name) •••• \(card.details)", info: .init(cardNetwork: network, cardDetails: card.details),
                    tokenizationData: .init(type: settings.tokenizationType, token: token)))
        }
        return router
    }
}

extension GooglePaySettings {
    /// `PAYMENT_GATEWAY` or `DIRECT`, as the page's `tokenizationSpecification` asks.
    fileprivate var tokenizationType: String {
        if case .gateway = mode { return "PAYMENT_GATEWAY" }
        return "DIRECT"
    }
}
