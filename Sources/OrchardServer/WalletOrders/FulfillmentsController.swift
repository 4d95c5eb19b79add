import Foundation
import Hummingbird
import OrchardCore

/// `/v1/payments/{id}/wallet-order` and `…/fulfillments`: the shop reads its payment's Wallet
/// order and tells how it ships. Another merchant's payment, or one without a Wallet order, is
/// "not found".
struct FulfillmentsController {
    let service: WalletOrderService

    /// The routes the router adds to the `/v1` group.
    var routes: RouteCollection<OrchardRequestContext> {
        let v1 = RouteCollection(context: OrchardRequestContext.self)
        v1.get("payments/{id}/wallet-order") { _, context in
            let merchant = try context.requireAPIMerchant()
            return try await service.view(paymentId: try context.parameters.require("id"), merchantIdentifier: merchant.merchantIdentifier)
        }
        v1.postJSON("payments/{id}/fulfillments") { request, context in
            let merchant = try context.requireAPIMerchant()
            let body = try await request.decode(as: FulfillmentRequest.self, context: context)
            return try await service.fulfill(
                body, paymentId: try context.parameters.require("id"), merchantIdentifier: merchant.merchantIdentifier)
        }
        return v1
    }
}

extension WalletOrderView: ResponseEncodable {}
