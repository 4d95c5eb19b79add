import Hummingbird
import OrchardCore

/// `GET /v1/merchant`: the merchant the API key is for, and what it takes.
struct MerchantController {
    /// The routes the router adds to the `/v1` group.
    var routes: RouteCollection<OrchardRequestContext> {
        let v1 = RouteCollection(context: OrchardRequestContext.self)
        v1.get("merchant") { _, context in APIMerchantView(try context.requireAPIMerchant()) }
        return v1
    }
}

extension APIMerchantView: ResponseEncodable {}
