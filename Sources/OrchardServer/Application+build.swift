import ApplePay
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import OrchardCore
import ServiceLifecycle

/// Builds the Orchard application: routes, static files and the services behind them.
///
/// - Parameters:
///   - configuration: the loaded, checked configuration.
///   - sessions: where merchant sessions come from (Apple's gateway in production).
///   - store: orders and payments.
///   - processors: where each merchant's authorized payments go (recorded only by default).
///   - vault: seals the requests kept for re-sending unknown payments; default: the configured
///     `payments.vaultKey`, else a random key (a restarted process then cannot re-send them;
///     `orchard serve` passes the state folder's key file).
///   - time: the clock used for certificate checks and payment records.
///   - simulator: the demo's simulated payment sheet; nil (the default) everywhere else.
///   - directory: configured and registered merchants (default: the configured ones only).
///   - registration: Apple's Web Merchant Registration API, for the admin API.
///   - merchantTokens: Apple's Merchant Token Management API, for token events (fetched from the
///     token-event inbox in the background) and unlinking (nil: neither).
///   - domainProbe: fetches domains' association files for `/admin/doctor?domains=true`.
///   - processorMaker: makes registered merchants' processors from their settings (nil: they record only).
///   - shopCalls: sends the webhook outbox to merchants' endpoints and asks their quote URLs; nil:
///     events are kept, not sent, and Orchard prices every change itself.
///   - expiryCheckInterval: how often certificate expiry is checked and logged.
///   - activity: what `/health` answers (ready once the server listens) and the requests in flight;
///     whoever begins a graceful shutdown calls `beginDraining()` on it first.
///   - onServerRunning: called with the bound port once the server listens.
public func buildApplication(
    configuration: ServerConfiguration,
    sessions: any MerchantSessionService,
    store: any OrchardStore,
    processors: PaymentProcessors = .recordOnly,
    vault: PaymentVault? = nil,
    time: TimeSource = .system,
    simulator: (any SimulatedApplePay)? = nil,
    directory: MerchantDirectory? = nil,
    registration: (any MerchantRegistrationService)? = nil,
    merchantTokens: (any MerchantTokenService)? = nil,
    domainProbe: (any DomainProbe)? = nil,
    processorMaker: (any ProcessorMaker)? = nil,
    shopCalls: (any ShopTransport)? = nil,
    expiryCheckInterval: Duration = .seconds(86_400),
    activity: ServerActivity = ServerActivity(),
    logger: Logger = Logger(label: "orchard"),
    onServerRunning: @escaping @Sendable (Int) async -> Void = { _ in }
) -> some ApplicationProtocol {
    let directory = directory ?? MerchantDirectory(configuration: configuration)
    for (partner, settings) in directory.settings {
        processors.setRegistered(processorMaker?.processor(for: settings.processor), forMerchant: partner)
    }
    let vault = vault ?? configuration.vault ?? .ephemeral()
    let engine = configuration.makePaymentsEngine(store: store, processors: processors, vault: vault, time: time, logger: logger)
    let mandates = MandateLifecycle(
        store: store, processors: processors, tokens: merchantTokens, directory: directory, time: time, logger: logger)
    // Apple's notifications are fetched in the background, only where Apple can be asked.
    let tokenEvents = merchantTokens.map { _ in
        TokenEventFetcher(
            store: store, lifecycle: mandates, budgets: TokenEventBudgets(policy: configuration.tokenEvents),
            gatewayTimeout: configuration.gateway.timeout, time: time, logger: logger)
    }
    let router = buildRouter(
        configuration: configuration, sessions: sessions, store: store, processors: processors, vault: vault, engine: engine,
        mandates: mandates, time: time, simulator: simulator, directory: directory, registration: registration,
        merchantTokens: merchantTokens, domainProbe: domainProbe, processorMaker: processorMaker, shopCalls: shopCalls,
        activity: activity, logger: logger)
    var app = Application(
        router: router,
        // A connection idle (or stuck in half a request) past the timeout is closed, so slow clients cannot hold sockets.
        server: .http1(
            configuration: .init(idleTimeout: .nanoseconds(Int64(configuration.idleTimeout.components.seconds) * 1_000_000_000))),
        configuration: .init(address: .hostname(configuration.host, port: configuration.port), serverName: "Orchard"),
        onServerRunning: { channel in
            activity.markReady()
            await onServerRunning(channel.localAddress?.port ?? 0)
        },
        logger: logger)
    for service in backgroundServices(
        configuration: configuration, store: store, engine: engine, directory: directory, processors: processors,
        processorMaker: processorMaker, shopCalls: shopCalls, tokenEvents: tokenEvents, expiryCheckInterval: expiryCheckInterval,
        time: time, logger: logger)
    {
        app.addServices(service)
    }
    return app
}

/// The public port's middleware and routes (the OpenAPI document lists the same routes; `OpenAPITests` compare them).
func buildRouter(
    configuration: ServerConfiguration, sessions: any MerchantSessionService, store: any OrchardStore, processors: PaymentProcessors,
    vault: PaymentVault, engine: PaymentsEngine, mandates: MandateLifecycle, time: TimeSource, simulator: (any SimulatedApplePay)?,
    directory: MerchantDirectory,
    registration: (any MerchantRegistrationService)?, merchantTokens: (any MerchantTokenService)?, domainProbe: (any DomainProbe)?,
    processorMaker: (any ProcessorMaker)?, shopCalls: (any ShopTransport)?, activity: ServerActivity, logger: Logger
) -> Router<OrchardRequestContext> {
    let router = Router(context: OrchardRequestContext.self)
    router.add(middleware: HTTPMetricsMiddleware(activity: activity))
    router.add(middleware: SecurityHeadersMiddleware(contentSecurityPolicy: configuration.contentSecurityPolicy))
    router.add(middleware: LogRequestsMiddleware(.debug))
    addStaticFiles(to: router, folder: configuration.publicDirectory, time: time, logger: logger)
    router.add(middleware: ClientAddressMiddleware(trustedProxies: configuration.trustedProxies, header: configuration.clientAddressHeader))
    router.add(middleware: MerchantMiddleware(directory: directory, maxBodyBytes: configuration.maxBodyBytes))
    let limiter = RateLimiter(settings: configuration.limits, time: time)
    OpenAPIController().addRoutes(to: router)
    DomainAssociationController().addRoutes(to: router)
    MerchantSessionController(configuration: configuration, sessions: sessions, limiter: limiter).addRoutes(to: router)
    let health = HealthController(configuration: configuration, directory: directory, time: time, activity: activity)
    health.addRoutes(to: router)
    OrdersController(
        configuration: configuration, store: store, time: time,
        quotes: shopCalls.map { QuoteClient(transport: $0, time: time, logger: logger) }, limiter: limiter
    ).addRoutes(to: router)
    AuthorizeController(engine: engine, limiter: limiter).addRoutes(to: router)
    let v1 = router.group("v1").add(middleware: APIKeyMiddleware(store: store, directory: directory))
    PaymentRequestsController(
        store: store, vault: vault, time: time, simulatedSheet: simulator == nil ? nil : SimulatedSheetController.scriptPath,
        limiter: limiter
    ).addRoutes(to: v1, page: router)
    PaymentsAPIController(store: store, engine: engine).addRoutes(to: v1)
    MandatesController(store: store, engine: engine, lifecycle: mandates, time: time).addRoutes(to: v1)
    TokenEventsController(
        store: store, directory: directory, policy: configuration.tokenEvents, limiter: limiter, fetching: merchantTokens != nil,
        time: time
    ).addRoutes(to: router)
    CheckoutController(configuration: configuration, simulator: simulator).addRoutes(to: router)
    if let simulator {
        SimulatedSheetController(configuration: configuration, simulator: simulator).addRoutes(to: router)
    }
    if let token = configuration.adminToken {
        // The one place the admin token is checked: every /admin route is in this group.
        let admin = router.group("admin").add(middleware: AdminAuthMiddleware(token: token))
        health.addAdminRoutes(to: admin)
        AdminController(
            configuration: configuration, directory: directory, store: store, registration: registration, sessions: sessions,
            domainProbe: domainProbe, engine: engine, time: time, processors: processors, processorMaker: processorMaker,
            lifecycle: mandates,
            webhooks: shopCalls.map {
                WebhookDispatcher(
                    store: store, transport: $0, directory: directory, policy: configuration.webhooks, time: time, logger: logger)
            }
        )
        .addRoutes(to: admin)
        AdminMandatesController(store: store, directory: directory, configuration: configuration, lifecycle: mandates)
            .addRoutes(to: admin)
    }
    return router
}

/// The checkout page and static files, from memory: `folder`'s small files, or the page built into the binary.
private func addStaticFiles(to router: Router<OrchardRequestContext>, folder: String?, time: TimeSource, logger: Logger) {
    if let folder {
        router.add(
            middleware: StaticFilesMiddleware(
                cache: StaticFileCache(folder: folder, time: time),
                fallback: FileMiddleware(folder, searchForIndexHtml: true, logger: logger)))
    } else {
        router.add(
            middleware: StaticFilesMiddleware(
                cache: .builtIn, fallback: FileMiddleware(fileProvider: EmbeddedFileProvider.builtIn, searchForIndexHtml: true)))
    }
}

/// The loops that run beside the server: expiry, reconciliation, purges, the token-event inbox, and those the configuration asks for.
private func backgroundServices(
    configuration: ServerConfiguration, store: any OrchardStore,
    engine: PaymentsEngine, directory: MerchantDirectory, processors: PaymentProcessors, processorMaker: (any ProcessorMaker)?,
    shopCalls: (any ShopTransport)?, tokenEvents: TokenEventFetcher?, expiryCheckInterval: Duration, time: TimeSource, logger: Logger
) -> [any Service] {
    var services: [any Service] = [
        CertificateExpiryMonitor(
            certificates: configuration.certificates, time: time, interval: expiryCheckInterval, logger: logger),
        PaymentReconciler(engine: engine, interval: configuration.reconciliation.reconcileInterval, logger: logger),
        PaymentRequestExpiry(store: store, interval: .seconds(15), time: time, logger: logger),
        RetentionPurge(store: store, policy: configuration.retention, time: time, logger: logger),
    ]
    if configuration.platform != nil {
        // Instances sharing one database learn each other's registrations within this interval.
        services.append(
            RegistrySync(
                store: store, directory: directory, processors: processors, processorMaker: processorMaker,
                interval: .seconds(2), logger: logger))
    }
    if let metrics = configuration.metrics {
        services.append(
            OperationalGauges(
                store: store, certificates: configuration.certificates, time: time, interval: metrics.refreshInterval, logger: logger))
    }
    if let tokenEvents {
        services.append(tokenEvents)
    }
    if let shopCalls {
        services.append(
            WebhookDispatcher(
                store: store, transport: shopCalls, directory: directory, policy: configuration.webhooks, time: time, logger: logger))
    }
    return services
}

/// Logs what an operator should know about a configuration at startup.
public func logStartup(_ configuration: ServerConfiguration, time: TimeSource, logger: Logger) {
    if configuration.trustsTestTokenRoot {
        logger.warning("payments.testTokenRootCertificate is set: payment tokens are verified against a TEST root, not Apple's")
    }
    if let metrics = configuration.metrics, !metrics.isLoopback {
        logger.warning(
            "metrics.host is not a loopback address: /metrics is reachable from the network; keep it behind a firewall",
            metadata: ["host": "\(metrics.host)", "port": "\(metrics.port)"])
    }
    if !configuration.gateway.isProductionHost {
        logger.warning(
            "appleGateway.baseURL is not an Apple host: merchant sessions go to a test gateway",
            metadata: ["baseURL": "\(configuration.gateway.baseURL)"])
    }
    for network in configuration.outbound.tenants.privateNetworks {
        logger.warning(
            "outbound.registeredMerchants.privateNetworks: registered merchants' webhooks, quote URLs and processors may reach this network, which is not public",
            metadata: ["network": "\(network)"])
    }
    for processor in configuration.outbound.tenantTestProcessors {
        logger.warning(
            "outbound.registeredMerchants.testProcessors: the admin API may give a registered merchant this processor, which is not Worldpay's or Worldline's own",
            metadata: ["baseURL": "\(processor.baseURL)"])
    }
    for merchant in configuration.merchants {
        let days = merchant.identity.daysLeft(at: time.now)
        let metadata: Logger.Metadata = [
            "merchant": "\(merchant.merchantIdentifier)", "domains": "\(merchant.domains.joined(separator: ","))",
            "identityDaysLeft": "\(days)",
        ]
        logger.info("merchant configured", metadata: metadata.merging(["processor": "\(merchant.processor.type)"]) { $1 })
        if let connection = merchant.processor.endpoint, !connection.isProductionHost {
            logger.warning(
                "the merchant's processor is a test host, not the processor's own",
                metadata: ["merchant": "\(merchant.merchantIdentifier)", "baseURL": "\(connection.baseURL)"])
        }
        if let hash = merchant.identity.merchantIdentifierHash,
            hash.uppercased() != MerchantIdentifierExtension.hash(of: merchant.merchantIdentifier)
        {
            logger.warning(
                "the identity certificate's merchant-ID extension does not match merchantIdentifier (fine for a platform integrator's partner ID)",
                metadata: ["merchant": "\(merchant.merchantIdentifier)", "certificate": "\(merchant.identitySource)"])
        }
    }
}

/// Headers every response carries.
struct SecurityHeadersMiddleware<Context: RequestContext>: RouterMiddleware {
    /// Made (and checked) once, not on every response.
    let fields: [HTTPField]

    init(contentSecurityPolicy: String) {
        fields = [
            HTTPField(name: .xContentTypeOptions, value: "nosniff"),
            HTTPField(name: HTTPField.Name("X-Frame-Options")!, value: "DENY"),
            HTTPField(name: HTTPField.Name("Referrer-Policy")!, value: "strict-origin-when-cross-origin"),
            HTTPField(name: .contentSecurityPolicy, value: contentSecurityPolicy),
            // Apple Pay JS needs the payment feature; only this origin's own pages get it.
            HTTPField(name: HTTPField.Name("Permissions-Policy")!, value: "payment=(self), camera=(), microphone=(), geolocation=()"),
        ]
    }

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        var response: Response
        do {
            response = try await next(request, context)
        } catch let error as any HTTPResponseError {
            response = try error.response(from: request, context: context)
        }
        for field in fields {
            if response.headers.contains(field.name) {
                response.headers[fields: field.name] = [field]
            } else {
                response.headers.append(field)
            }
        }
        return response
    }
}

extension ServerConfiguration {
    /// The policy every response carries: nothing inline, nothing from elsewhere but Apple's
    /// SDK when one is configured. The page and the demo's simulated sheet are built for it.
    public var contentSecurityPolicy: String {
        let sdk = applePaySDK.flatMap(Self.origin).map { " \($0)" } ?? ""
        return [
            "default-src 'none'", "script-src 'self'\(sdk)", "style-src 'self'", "img-src 'self' data:\(sdk)",
            "connect-src 'self'\(sdk)", "frame-src \(sdk.isEmpty ? "'none'" : String(sdk.dropFirst()))", "font-src 'self'",
            "manifest-src 'self'", "base-uri 'none'", "form-action 'self'", "frame-ancestors 'none'",
        ].joined(separator: "; ")
    }

    static func origin(_ url: URL) -> String? {
        guard let scheme = url.scheme?.lowercased(), let host = url.host?.lowercased() else { return nil }
        let bracketed = host.contains(":") ? "[\(host)]" : host
        return url.port.map { "\(scheme)://\(bracketed):\($0)" } ?? "\(scheme)://\(bracketed)"
    }
}
