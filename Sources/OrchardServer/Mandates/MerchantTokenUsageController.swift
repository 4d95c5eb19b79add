import Foundation
import HTTPTypes
import Hummingbird
import OrchardCore
import OrchardServices

/// `GET /apple-pay/merchant-token-usage/v1/merchantToken/{id}/usageInformation`: the shopper's
/// device fetching a merchant token's usage information, with the `authenticationToken` Orchard
/// announced to Apple for it (`Authorization: ApplePayMerchantTokenUsageInformation <token>`).
/// The token names the merchant, not the Host, so the route answers on any host; a token Orchard
/// does not know, another merchant's, or a wrong authentication token get the same 404.
struct MerchantTokenUsageController {
    let service: MerchantTokenUsageService
    let limiter: RateLimiter

    /// The routes the router adds.
    var routes: RouteCollection<OrchardRequestContext> {
        let router = RouteCollection(context: OrchardRequestContext.self)
        router.get("\(MerchantTokenUsageSettings.servicePath)/v1/merchantToken/{token}/usageInformation") { request, context in
            try await package(request, context)
        }
        return router
    }

    func package(_ request: Request, _ context: OrchardRequestContext) async throws -> Response {
        // Wallet's calls share one budget per client, Wallet orders' and these.
        try limiter.check(.walletOrders, context: context, merchant: nil)
        let token = try context.parameters.require("token")
        guard request.headers[.authorization] != nil else {
            throw OrchardError(
                .unauthorized, "the Authorization header must be ApplePayMerchantTokenUsageInformation <authenticationToken>")
        }
        guard
            let package = try await service.package(merchantTokenIdentifier: token, authorization: request.headers[.authorization])
        else {
            throw OrchardError(.notFound, "no usage information for this merchant token and authentication token")
        }
        var headers = HTTPFields()
        headers[.contentType] = "application/json"
        headers[.cacheControl] = "no-store"
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: try encoder.encode(package))))
    }
}
