import Foundation
import Hummingbird
import OrchardCore
import OrchardServices

/// `POST /admin/usage-keys/{merchant}/rotate`: replaces a merchant's usage key (merchant token
/// usage information), behind the admin token. Every token of the merchant is announced again,
/// sealed with the new key; the old key is kept, retired, and seals nothing more.
struct AdminUsageKeysController {
    let service: MerchantTokenUsageService

    struct Rotated: ResponseEncodable {
        var merchantIdentifier: String
        var keyId: String
        var createdAt: Date
        /// How many merchant tokens are due to be announced again.
        var announcementsDue: Int
    }

    /// Its routes in the `/admin` group, which checks the admin token.
    var routes: RouteCollection<OrchardRequestContext> {
        let admin = RouteCollection(context: OrchardRequestContext.self)
        admin.post("usage-keys/{merchant}/rotate") { _, context in
            let raw = try context.parameters.require("merchant")
            let merchant = raw.removingPercentEncoding ?? raw
            guard (1...255).contains(merchant.utf8.count) else { throw OrchardError(.notFound, "there is no such merchant") }
            let (key, due) = try await service.rotateKey(merchantIdentifier: merchant)
            return Rotated(merchantIdentifier: merchant, keyId: key.id, createdAt: key.createdAt, announcementsDue: due)
        }
        return admin
    }
}
