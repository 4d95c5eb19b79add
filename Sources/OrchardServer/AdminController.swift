import ApplePay
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import OrchardCore

/// `/admin/merchants`: the merchant registry, domain registration and registered merchants'
/// settings, behind the admin token (payments, API keys, webhooks and the doctor have
/// controllers of their own). Not routed at all when no `admin.token` is configured.
struct AdminController {
    let configuration: ServerConfiguration
    let directory: MerchantDirectory
    /// The registry and its sealed settings, and what a retirement revokes, skips and ends.
    let store: any MerchantRegistry & APIKeys & WebhookOutbox & MandateRecords
    let registration: (any MerchantRegistrationService)?
    let time: TimeSource
    /// Where registered merchants' processors are set when an operator changes them.
    let processors: PaymentProcessors
    let processorMaker: (any ProcessorMaker)?
    /// Ends mandates when a registered merchant is retired.
    let lifecycle: MandateLifecycle
    /// Sends a retired merchant's last events.
    let webhooks: WebhookDispatcher?

    var retirement: TenantRetirement {
        TenantRetirement(
            store: store, directory: directory, processors: processors, lifecycle: lifecycle, webhooks: webhooks, time: time,
            logger: lifecycle.logger)
    }

    struct RegisterBody: Decodable {
        var partnerInternalMerchantIdentifier: String
        var partnerMerchantName: String
        var domainNames: [String]
        var merchantUrl: String?
        var encryptTo: String?
    }

    struct UnregisterBody: Decodable {
        var domainNames: [String]
        var reason: String
    }

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
                platformIntegrator: configuration.platform?.merchantIdentifier,
                configured: configuration.merchants.map {
                    ConfiguredMerchant(
                        merchantIdentifier: $0.merchantIdentifier, displayName: $0.displayName, domains: $0.domains,
                        takesOrders: $0.catalogue != nil)
                },
                registered: directory.registrations)
        }
        admin.postJSON("merchants") { request, context in
            try await register(request, context: context)
        }
        admin.get("merchants/{id}") { _, context in
            let id = try Self.partnerIdentifier(context)
            let local = directory.registrations.first { $0.partnerIdentifier == id }
            var apple: RegisteredMerchantDetails?
            let service = try service()
            do throws(GatewayError) {
                apple = try await service.details(partnerIdentifier: id)
            } catch  where error.appleStatus == 404 {
                apple = nil
            } catch {
                throw OrchardError(registration: error)
            }
            guard local != nil || apple != nil else { throw OrchardError(.notFound, "no merchant \(id) is registered") }
            return Details(registered: local, apple: apple)
        }
        admin.postJSON("merchants/{id}/unregister") { request, context in
            try await unregister(request, id: try Self.partnerIdentifier(context), context: context)
        }
        addSettingsRoutes(to: admin)
        return admin
    }

    /// The `{id}` path segment, percent-decoded (partner IDs may hold `|`, `&`, `$`…).
    static func partnerIdentifier(_ context: some RequestContext) throws -> String {
        let raw = try context.parameters.require("id")
        return raw.removingPercentEncoding ?? raw
    }

    /// A registration call, its failure mapped for the admin.
    static func apple(_ call: () async throws(GatewayError) -> Void) async throws(OrchardError) {
        do {
            try await call()
        } catch {
            throw OrchardError(registration: error)
        }
    }

    func service() throws(OrchardError) -> any MerchantRegistrationService {
        guard let registration else {
            throw OrchardError(
                .platformNotConfigured, "domain registration needs a platformIntegrator (identity certificate and key) in the configuration"
            )
        }
        return registration
    }

    func register(_ request: Request, context: OrchardRequestContext) async throws -> EditedResponse<RegisteredMerchant> {
        let logger = context.logger
        let service = try service()
        let body = try await request.decode(as: RegisterBody.self, context: context)
        let registration: MerchantRegistration
        do {
            registration = try MerchantRegistration(
                domainNames: body.domainNames, encryptTo: body.encryptTo ?? configuration.platform?.merchantIdentifier ?? "",
                partnerInternalMerchantIdentifier: body.partnerInternalMerchantIdentifier, partnerMerchantName: body.partnerMerchantName,
                merchantUrl: body.merchantUrl
            ).validated()
        } catch {
            throw OrchardError(.invalidRegistration, error.message)
        }
        // A registered merchant's tokens are decrypted with the platform's processing keys, so Apple
        // must encrypt them to the platform: any other encryptTo would make every payment undecryptable.
        if let platform = configuration.platform?.merchantIdentifier, registration.encryptTo != platform {
            throw OrchardError(
                .invalidRegistration,
                "encryptTo must be the platform integrator's merchant ID, \(platform) (the default): Orchard decrypts registered merchants' payments with its processing keys"
            )
        }
        let id = registration.partnerInternalMerchantIdentifier
        if let reservation = directory.reservation(of: id) {
            throw OrchardError(
                .identifierTaken, "\(id) is \(reservation): a registered merchant needs a partnerInternalMerchantIdentifier of its own")
        }
        for domain in registration.domainNames {
            if let owner = directory.owner(of: domain), owner != id {
                throw OrchardError(.domainTaken, "\(domain) already belongs to \(owner) on this server")
            }
        }
        try await Self.apple { () async throws(GatewayError) in try await service.register(registration) }
        // The store, not this instance's copy, says whether the merchant is new: another instance
        // may have registered it a moment ago.
        let existing: RegisteredMerchant?
        do {
            existing = try await store.registeredMerchants().first { $0.partnerIdentifier == id }
            // A new tenant starts clean: whatever an earlier one under this identifier left (keys,
            // settings, mandates, events) is retired first.
            if existing == nil { try await retirement.retire(id) }
        } catch {
            throw OrchardError(.internalError, "Apple registered the merchant but the registry could not record it; repeat the call")
        }
        let now = time.now
        let merchant = RegisteredMerchant(
            partnerIdentifier: id, name: registration.partnerMerchantName, encryptTo: registration.encryptTo,
            merchantUrl: registration.merchantUrl,
            domains: (existing?.domains ?? []) + registration.domainNames.filter { !(existing?.domains ?? []).contains($0) },
            createdAt: existing?.createdAt ?? now, updatedAt: now)
        try await save(merchant, after: "registered")
        logger.info("merchant registered", metadata: ["partner": "\(id)", "domains": "\(registration.domainNames.joined(separator: ","))"])
        return EditedResponse(status: existing == nil ? .created : .ok, response: merchant)
    }

    func unregister(_ request: Request, id: String, context: OrchardRequestContext) async throws -> RemainingDomains {
        let logger = context.logger
        let service = try service()
        let body = try await request.decode(as: UnregisterBody.self, context: context)
        let unregistration: MerchantUnregistration
        do {
            unregistration = try MerchantUnregistration(
                domainNames: body.domainNames, partnerInternalMerchantIdentifier: id, reason: body.reason
            ).validated()
        } catch {
            throw OrchardError(.invalidRegistration, error.message)
        }
        guard var merchant = directory.registrations.first(where: { $0.partnerIdentifier == id }) else {
            throw OrchardError(.notFound, "no merchant \(id) is registered on this server")
        }
        if let missing = unregistration.domainNames.first(where: { !merchant.domains.contains($0) }) {
            throw OrchardError(.notFound, "\(missing) is not registered to \(id)")
        }
        try await Self.apple { () async throws(GatewayError) in try await service.unregister(unregistration) }
        merchant.domains.removeAll { unregistration.domainNames.contains($0) }
        merchant.updatedAt = time.now
        do {
            // Apple deletes a merchant with its last domain; the registry retires it.
            if merchant.domains.isEmpty {
                try await retirement.retire(id)
            } else {
                try await store.saveRegistration(merchant)
                directory.replaceRegistrations(try await store.registeredMerchants())
            }
        } catch {
            throw OrchardError(.internalError, "Apple unregistered the domains but the registry could not record it; repeat the call")
        }
        logger.info(
            "merchant domains unregistered",
            metadata: ["partner": "\(id)", "domains": "\(unregistration.domainNames.joined(separator: ","))", "reason": "\(body.reason)"])
        return RemainingDomains(remainingDomains: merchant.domains)
    }

    /// Records a change Apple already accepted; Apple's calls are idempotent, so a failure here is fixed by repeating.
    func save(_ merchant: RegisteredMerchant, after what: String) async throws {
        do {
            try await store.saveRegistration(merchant)
            directory.replaceRegistrations(try await store.registeredMerchants())
        } catch let error as BusinessRefusal where error.code == .domainTaken {
            throw OrchardError(.domainTaken, error.message)
        } catch {
            throw OrchardError(.internalError, "Apple \(what) the merchant but the registry could not record it; repeat the call")
        }
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
