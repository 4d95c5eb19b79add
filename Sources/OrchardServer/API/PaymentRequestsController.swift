import ApplePay
import Foundation
import HTTPTypes
import Hummingbird
import OrchardCore
import OrchardServices

/// `POST /v1/payment-requests` and `GET /v1/payment-requests/{id}`: the shop's backend creates
/// a payment for its own cart and reads where it stands (and withdraws or extends it). The page opens it with the client
/// secret (`POST /api/payment-requests/open`) and pays it on the shop's domain. Decoding and
/// rate limits here; the rules in ``PaymentRequestService``.
struct PaymentRequestsController {
    let service: PaymentRequestService
    /// The demo's simulated sheet, named to the page that opens a request; nil outside the demo.
    let simulatedSheet: String?
    let limiter: RateLimiter
    /// How long the page waits for a wallet's script (`checkout.applePaySDKTimeoutMilliseconds`).
    let scriptTimeoutMs: Int

    struct OpenBody: Decodable {
        var clientSecret: String
    }

    /// The shop's routes, for the `/v1` group that checks its API key.
    var apiRoutes: RouteCollection<OrchardRequestContext> {
        let routes = RouteCollection(context: OrchardRequestContext.self)
        routes.postJSON("payment-requests") { request, context in
            let merchant = try context.requireAPIMerchant()
            try limiter.check(.paymentRequests, context: context, merchant: merchant.merchantIdentifier)
            let key = try idempotencyKey(request)
            let draft = try await request.decode(as: PaymentRequestDraft.self, context: context)
            let (view, created) = try await service.create(draft, idempotencyKey: key, merchant: merchant)
            return EditedResponse(status: created ? .created : .ok, response: view)
        }
        routes.post("payment-requests/{id}/cancel") { _, context in
            let merchant = try context.requireAPIMerchant()
            return try await service.cancel(id: try context.parameters.require("id"), merchant: merchant)
        }
        routes.postJSON("payment-requests/{id}/extend") { request, context in
            let merchant = try context.requireAPIMerchant()
            let change = try await request.decode(as: PaymentRequestExtension.self, context: context)
            return try await service.extend(id: try context.parameters.require("id"), change, merchant: merchant)
        }
        routes.get("payment-requests/{id}") { _, context in
            let merchant = try context.requireAPIMerchant()
            let record = try await service.request(id: try context.parameters.require("id"), merchant: merchant)
            return try await service.view(record, merchant: merchant)
        }
        return routes
    }

    /// The shopper's page's route, on the `Host`'s merchant.
    var pageRoutes: RouteCollection<OrchardRequestContext> {
        let routes = RouteCollection(context: OrchardRequestContext.self)
        routes.postJSON("/api/payment-requests/open") { request, context in
            let (merchant, _) = try context.requireMerchant()
            let body = try await request.decode(as: OpenBody.self, context: context)
            var opened = try await service.open(clientSecret: body.clientSecret, merchant: merchant, simulatedSheet: simulatedSheet)
            opened.googlePay?.scriptTimeoutMs = scriptTimeoutMs
            return opened
        }
        return routes
    }
}

/// The `Idempotency-Key` header: required, 1–255 visible ASCII characters (``ShopInput``).
func idempotencyKey(_ request: Request) throws(CoreError) -> String {
    try ShopInput.idempotencyKey(HTTPField.Name("Idempotency-Key").flatMap { request.headers[$0] })
}

extension PaymentRequestView: ResponseEncodable {}
extension ShopperPaymentRequestView: ResponseEncodable {}
