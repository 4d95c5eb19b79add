import ApplePay
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import OrchardCore
import OrchardServices

/// `/admin/merchants`: the merchant registry, domain registration and registered merchants'
/// settings, behind the admin token (payments, API keys, webhooks and the doctor have
/// controllers of their own). Decoding here; the rules in ``MerchantRegistryService``. Not
/// routed at all when no `admin.token` is configured.
struct AdminController {
    /// The configured merchants (`merchants`) and the platform integrator's own, if any.
    let merchants: [MerchantConfiguration]
    let platform: MerchantConfiguration?
    let directory: MerchantDirectory
    let registry: MerchantRegistryService
    /// Checks and seals settings; nil without `platformIntegrator.settingsKey`.
    let sealer: RegisteredSettingsSealer?

    struct ConfiguredMerchant: Encodable {
        var merchantIdentifier: String
        var displayName: String
        var domains: [String]
        var takesOrders: Bool
    }

    struct Listing: ResponseEncodable {
        var platformIntegrator: String?
        var configured: [ConfiguredMerchant]
        var registered: [RegisteredMerchant]
    }

    struct RemainingDomains: ResponseEncodable {
        var remainingDomains: [String]
    }

    struct Details: ResponseEncodable {
        var registered: RegisteredMerchant?
        var apple: RegisteredMerchantDetails?
    }

    /// Its routes in the `/admin` group, which checks the admin token.
    var routes: RouteCollection<OrchardRequestContext> {
        let admin = RouteCollection(context: OrchardRequestContext.self)
        admin.get("merchants") { _, _ in
            Listing(
                platformIntegrator: platform?.merchantIdentifier,
                configured: merchants.map {
                    ConfiguredMerchant(
                        merchantIdentifier: $0.merchantIdentifier, displayName: $0.displayName, domains: $0.domains,
                        takesOrders: $0.catalogue != nil)
                },
                registered: directory.registrations)
        }
        admin.postJSON("merchants") { request, context in
            let (merchant, created) = try await registry.register(
                { try await request.decode(as: MerchantRegistrationDraft.self, context: context) }, logger: context.logger)
            return EditedResponse(status: created ? .created : .ok, response: merchant)
        }
        admin.get("merchants/{id}") { _, context in
            let (registered, apple) = try await registry.details(try Self.partnerIdentifier(context))
            return Details(registered: registered, apple: apple)
        }
        admin.postJSON("merchants/{id}/unregister") { request, context in
            let remaining = try await registry.unregister(
                try Self.partnerIdentifier(context), { try await request.decode(as: MerchantUnregistrationDraft.self, context: context) },
                logger: context.logger)
            return RemainingDomains(remainingDomains: remaining)
        }
        addSettingsRoutes(to: admin)
        return admin
    }

    /// The `{id}` path segment, percent-decoded (partner IDs may hold `|`, `&`, `$`…).
    static func partnerIdentifier(_ context: some RequestContext) throws -> String {
        let raw = try context.parameters.require("id")
        return raw.removingPercentEncoding ?? raw
    }
}

/// Lets a request through only with `Authorization: Bearer <admin token>`.
struct AdminAuthMiddleware<Context: RequestContext>: RouterMiddleware {
    let token: AdminToken

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        guard let header = request.headers[.authorization], header.count > 7, header.prefix(7).lowercased() == "bearer ",
            token.matches(Array(header.dropFirst(7).utf8))
        else {
            context.logger.warning("admin request refused", metadata: ["path": "\(request.uri.path)"])
            throw OrchardError(.unauthorized, "the admin API needs the header Authorization: Bearer <admin token>")
        }
        return try await next(request, context)
    }
}

extension Parameters {
    /// The admin lists' `limit`: `fallback` when absent, 400 unless a whole number from 1 to 1000.
    func adminLimit(default fallback: Int) throws -> Int {
        guard let text = self["limit"] else { return fallback }
        guard let limit = Int(String(text)), (1...1000).contains(limit) else {
            throw OrchardError(.invalidRequest, "limit must be a whole number from 1 to 1000")
        }
        return limit
    }
}
