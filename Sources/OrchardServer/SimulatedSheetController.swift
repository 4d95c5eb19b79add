import ApplePay
import Foundation
import Hummingbird
import OrchardCore

/// A stand-in for Safari's payment sheet, for `orchard-sandbox demo` and tests only: its script
/// defines `ApplePaySession` in any browser, and it mints real tokens signed by a test chain.
///
/// `buildApplication` serves it only when given one, and only the demo passes one; no
/// configuration file can turn it on.
public protocol SimulatedApplePay: Sendable {
    /// The sheet's files, by name under `/demo/`: `simulated-sheet.js` (the ES module that installs
    /// the `ApplePaySession` test double), the modules it imports and its stylesheet, and with a
    /// stand-in for Apple's JS SDK, `apple-pay-sdk.js`, which installs the sheet as the SDK installs
    /// its session in browsers without Apple Pay of their own (without it, the page installs the sheet).
    var files: [String: [UInt8]] { get }
    /// A token for `amount` (minor units) encrypted to `merchant`'s processing key and
    /// carrying SHA-256 of `applicationData`, as Safari would produce for that sheet; with
    /// `merchantToken`, a merchant token (an MPAN with a new token identifier), as Safari gives
    /// for a recurring, deferred or automatic-reload request.
    func mintToken(
        amount: Int64, currency: Currency, applicationData: [UInt8]?, paymentMethod: PaymentToken.PaymentMethod,
        merchant: MerchantConfiguration, merchantToken: Bool
    ) throws -> PaymentToken
}

/// Routes of the simulated sheet under `/demo/`.
struct SimulatedSheetController {
    static let folder = "/demo/"
    static let scriptPath = folder + "simulated-sheet.js"
    static let standInSDKName = "apple-pay-sdk.js"
    static let standInSDKPath = folder + standInSDKName

    let configuration: ServerConfiguration
    let simulator: any SimulatedApplePay

    /// What the sheet posts when the shopper pays: the amount it shows, the request's currency and applicationData.
    struct MintBody: Decodable {
        var amount: String
        var currencyCode: String
        var applicationData: String?
        var paymentMethod: PaymentToken.PaymentMethod?
        /// The sheet showed an agreement: pay with a merchant token.
        var merchantToken: Bool?
    }

    /// The routes the router adds.
    var routes: RouteCollection<OrchardRequestContext> {
        let router = RouteCollection(context: OrchardRequestContext.self)
        for (name, bytes) in simulator.files {
            let type = name.hasSuffix(".css") ? "text/css; charset=utf-8" : "text/javascript; charset=utf-8"
            router.get(RouterPath(Self.folder + name)) { _, _ in Self.file(bytes, type: type) }
        }
        router.postJSON("/demo/token") { request, context in
            let (merchant, _) = try context.requireMerchant()
            let bytes = try await readBody(request, limit: configuration.maxBodyBytes)
            guard let body = try? JSONDecoder().decode(MintBody.self, from: Data(bytes)) else {
                throw OrchardError(
                    .invalidJSON, "the body must be {amount, currencyCode, applicationData?, paymentMethod?, merchantToken?}")
            }
            guard let currency = Currency(code: body.currencyCode), let amount = Money.minorUnits(body.amount, currency: currency)
            else {
                throw OrchardError(.invalidRequest, "amount must be a decimal string in the currency's exponent")
            }
            var applicationData: [UInt8]?
            if let base64 = body.applicationData {
                guard let data = Data(base64Encoded: base64) else {
                    throw OrchardError(.invalidRequest, "applicationData must be base64")
                }
                applicationData = Array(data)
            }
            let method = body.paymentMethod ?? PaymentToken.PaymentMethod(displayName: "Visa 1111", network: "Visa", type: "debit")
            let token = try simulator.mintToken(
                amount: amount, currency: currency, applicationData: applicationData, paymentMethod: method, merchant: merchant,
                merchantToken: body.merchantToken ?? false)
            return token
        }
        return router
    }

    static func file(_ bytes: [UInt8], type: String) -> Response {
        Response(
            status: .ok, headers: [.contentType: type, .cacheControl: "no-store"],
            body: ResponseBody(byteBuffer: ByteBuffer(bytes: bytes)))
    }
}
