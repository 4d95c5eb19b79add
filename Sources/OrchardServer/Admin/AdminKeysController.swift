import ApplePay
import Foundation
import Hummingbird
import OrchardCore

/// Every merchant's API keys for the payments API: `/admin/merchants/{id}/api-keys` and
/// `/admin/api-keys/{key}`. A secret is shown once, in the answer that creates it.
struct AdminKeysController {
    let store: any APIKeys
    let directory: any MerchantLookup
    let time: TimeSource

    struct KeyView: ResponseEncodable {
        var id: String
        var merchantIdentifier: String
        var createdAt: Date
        var revokedAt: Date?
        /// Only in the answer that creates the key.
        var secret: String?

        init(_ key: APIKeyRecord, secret: String? = nil) {
            id = key.id
            merchantIdentifier = key.merchantIdentifier
            createdAt = key.createdAt
            revokedAt = key.revokedAt
            self.secret = secret
        }
    }

    struct KeyList: ResponseEncodable { var keys: [KeyView] }

    /// Its routes in the `/admin` group, which checks the admin token.
    var routes: RouteCollection<OrchardRequestContext> {
        let admin = RouteCollection(context: OrchardRequestContext.self)
        admin.post("merchants/{id}/api-keys") { _, context in
            let id = try AdminController.partnerIdentifier(context)
            guard directory.merchant(identifier: id) != nil else { throw OrchardError(.notFound, "there is no merchant \(id)") }
            let (record, secret) = APIKeyRecord.generate(merchantIdentifier: id, at: time.now)
            // Over the cap, the store's CoreError answers 422 too_many_keys (OrchardError's mapping).
            try await store.insertAPIKey(record)
            return EditedResponse(status: .created, response: KeyView(record, secret: secret))
        }
        admin.get("merchants/{id}/api-keys") { _, context in
            KeyList(keys: try await store.apiKeys(merchantIdentifier: try AdminController.partnerIdentifier(context)).map { KeyView($0) })
        }
        admin.delete("api-keys/{key}") { _, context in
            guard try await store.revokeAPIKey(id: try context.parameters.require("key"), at: time.now) else {
                throw OrchardError(.notFound, "there is no active API key \(try context.parameters.require("key"))")
            }
            return Response(status: .noContent)
        }
        return admin
    }
}
