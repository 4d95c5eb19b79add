import ApplePay
import Foundation
import Hummingbird
import OrchardCore

/// Routes of the simulated sheet under `/demo/`.
struct SimulatedSheetController {
    static let folder = "/demo/"
    static let scriptPath = folder + "simulated-sheet.js"
    static let standInSDKName = "apple-pay-sdk.js"
    static let standInSDKPath = folder + standInSDKName

    /// The largest body read (`server.maxBodyBytes`).
    let maxBodyBytes: Int
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
        Self.serve(simulator.files, on: router)
        router.postJSON("/demo/token") { request, context in
            let (merchant, _) = try context.requireMerchant()
            let bytes = try await readBody(request, limit: maxBodyBytes)
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

    /// Serves a stand-in's `files` by name under `/demo/`: its scripts and stylesheets.
    static func serve(_ files: [String: [UInt8]], on router: RouteCollection<OrchardRequestContext>) {
        for (name, bytes) in files {
            let type = name.hasSuffix(".css") ? "text/css; charset=utf-8" : "text/javascript; charset=utf-8"
            router.get(RouterPath(folder + name)) { _, _ in file(bytes, type: type) }
        }
    }

    static func file(_ bytes: [UInt8], type: String) -> Response {
        Response(
            status: .ok, headers: [.contentType: type, .cacheControl: "no-store"],
            body: ResponseBody(byteBuffer: ByteBuffer(bytes: bytes)))
    }
}
