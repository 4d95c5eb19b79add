import Foundation
import Hummingbird
import Logging
import OrchardCore
import OrchardServices

/// Authenticates `/v1/` calls by a merchant's secret API key (`Authorization: Bearer osk_…`):
/// the key is looked up by the ID inside it and its hash compared in constant time. Any
/// failure is the same 401, so a caller learns nothing about which part was wrong.
struct APIKeyMiddleware: RouterMiddleware {
    let store: any APIKeys
    let directory: MerchantDirectory

    func handle(
        _ request: Request, context: OrchardRequestContext, next: (Request, OrchardRequestContext) async throws -> Response
    ) async throws -> Response {
        var context = context
        guard let merchant = try await authenticate(request.headers[.authorization]) else {
            context.logger.notice("payments API request refused: no valid API key", metadata: ["path": "\(request.uri.path)"])
            throw OrchardError(
                .unauthorized, "the payments API needs Authorization: Bearer <secret API key> (create one with `orchard keys create`)")
        }
        context.apiMerchant = merchant
        return try await next(request, context)
    }

    func authenticate(_ header: String?) async throws -> MerchantConfiguration? {
        guard let header, header.count > 7, header.prefix(7).lowercased() == "bearer " else { return nil }
        let secret = String(header.dropFirst(7)).trimmingCharacters(in: .whitespaces)
        guard let id = APIKeyRecord.keyId(ofSecret: secret), let key = try await store.apiKey(id: id), key.matches(secret) else {
            return nil
        }
        return directory.merchant(identifier: key.merchantIdentifier)
    }
}
