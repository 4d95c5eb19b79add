import ApplePay
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import OrchardCore
import ServiceLifecycle

/// Builds the Orchard application from its dependencies: routes, static files and the services
/// behind them. `onServerRunning` is called with the bound port once the server listens.
public func buildApplication(
    _ dependencies: ApplicationDependencies, onServerRunning: @escaping @Sendable (Int) async -> Void = { _ in }
) -> some ApplicationProtocol {
    let configuration = dependencies.configuration
    let services = SharedServices(dependencies)
    let router = buildRouter(dependencies, services: services)
    let activity = dependencies.activity
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
        logger: dependencies.logger)
    for service in backgroundServices(dependencies, services: services) {
        app.addServices(service)
    }
    return app
}

/// What the routes and the background loops share, made once from the dependencies.
struct SharedServices {
    let engine: PaymentsEngine
    let mandates: MandateLifecycle
    /// Apple's notifications are fetched in the background, only where Apple can be asked.
    let tokenEvents: TokenEventFetcher?
    /// Delivers the outbox in the background; a retirement sends a leaving tenant's last events through it.
    let webhooks: WebhookDispatcher?

    init(_ dependencies: ApplicationDependencies) {
        let (configuration, store, time, logger) = (dependencies.configuration, dependencies.store, dependencies.time, dependencies.logger)
        engine = configuration.makePaymentsEngine(
            store: store, processors: dependencies.processors, vault: dependencies.vault, time: time, logger: logger)
        let mandates = MandateLifecycle(
            store: store, processors: dependencies.processors, tokens: dependencies.merchantTokens, directory: dependencies.directory,
            time: time, logger: logger)
        self.mandates = mandates
        webhooks = dependencies.shopCalls.map {
            WebhookDispatcher(
                store: store, transport: $0, directory: dependencies.directory, policy: configuration.webhooks, time: time, logger: logger)
        }
        tokenEvents = dependencies.merchantTokens.map { _ in
            TokenEventFetcher(
                store: store, lifecycle: mandates, budgets: TokenEventBudgets(policy: configuration.tokenEvents),
                gatewayTimeout: configuration.gateway.timeout, time: time, logger: logger)
        }
    }
}

/// The public port's middleware and routes (the OpenAPI document lists the same routes; `OpenAPITests` compare them).
func buildRouter(_ dependencies: ApplicationDependencies, services: SharedServices) -> Router<OrchardRequestContext> {
    let d = dependencies
    let (configuration, store, time, directory, logger) = (d.configuration, d.store, d.time, d.directory, d.logger)
    let (engine, mandates) = (services.engine, services.mandates)
    let router = Router(context: OrchardRequestContext.self)
    router.add(middleware: RequestTracingMiddleware(accept: configuration.acceptTraceparent, trustedProxies: configuration.trustedProxies))
    router.add(middleware: HTTPMetricsMiddleware(activity: d.activity))
    router.add(middleware: SecurityHeadersMiddleware(contentSecurityPolicy: configuration.contentSecurityPolicy))
    // Each request's line is logged at debug; the level is set once at startup, so above it the
    // middleware would only cost its call on every request.
    if logger.logLevel <= .debug {
        router.add(middleware: LogRequestsMiddleware(.debug))
    }
    addStaticFiles(to: router, folder: configuration.publicDirectory, time: time, logger: logger)
    router.addRoutes(DomainAssociationController(directory: directory, signer: d.vault.domainFileSigner).routes)
    // Who the client is and which merchant its Host names matter to the routes below only: a
    // static file, a 404 (no route matched) or the association file is answered without either.
    let routes = router.group()
        .add(middleware: EventLoopExecutorMiddleware())
        .add(middleware: ClientAddressMiddleware(trustedProxies: configuration.trustedProxies, header: configuration.clientAddressHeader))
        .add(middleware: MerchantMiddleware(directory: directory, maxBodyBytes: configuration.maxBodyBytes))
    let limiter = RateLimiter(settings: configuration.limits, time: time)
    routes.addRoutes(OpenAPIController().routes)
    routes.addRoutes(MerchantSessionController(maxBodyBytes: configuration.maxBodyBytes, sessions: d.sessions, limiter: limiter).routes)
    let health = HealthController(
        merchants: configuration.merchants, certificates: configuration.certificates, directory: directory, time: time,
        activity: d.activity)
    routes.addRoutes(health.routes)
    let orders = OrderService(
        orders: store, quotes: d.shopCalls.map { QuoteClient(transport: $0, time: time, logger: logger) }, time: time,
        openFor: configuration.ordersOpenFor.timeInterval)
    routes.addRoutes(OrdersController(service: orders, limiter: limiter).routes)
    routes.addRoutes(AuthorizeController(engine: engine, limiter: limiter).routes)
    let v1 = routes.group("v1").add(middleware: APIKeyMiddleware(store: store, directory: directory))
    let requestService = PaymentRequestService(store: store, vault: d.vault, time: time)
    let paymentRequests = PaymentRequestsController(
        service: requestService,
        simulatedSheet: d.simulator == nil ? nil : SimulatedSheetController.scriptPath, limiter: limiter)
    v1.addRoutes(paymentRequests.apiRoutes)
    routes.addRoutes(paymentRequests.pageRoutes)
    let paymentsAPI = PaymentsAPIController(store: store, engine: engine)
    v1.addRoutes(paymentsAPI.routes)
    v1.addRoutes(InAppAuthorizeController(requests: requestService, payments: paymentsAPI, limiter: limiter).routes)
    v1.addRoutes(
        MandatesController(service: MandateChargeService(store: store, engine: engine, time: time), lifecycle: mandates).routes)
    routes.addRoutes(
        TokenEventsController(
            store: store, directory: directory, policy: configuration.tokenEvents, limiter: limiter, fetching: d.merchantTokens != nil,
            time: time
        ).routes)
    routes.addRoutes(
        CheckoutController(applePaySDK: configuration.applePaySDK, page: configuration.checkoutPage, simulator: d.simulator).routes)
    if let simulator = d.simulator {
        routes.addRoutes(SimulatedSheetController(maxBodyBytes: configuration.maxBodyBytes, simulator: simulator).routes)
    }
    if let token = configuration.adminToken {
        // The one place the admin token is checked: every /admin route is in this group.
        let admin = routes.group("admin").add(middleware: AdminAuthMiddleware(token: token))
        admin.addRoutes(health.adminRoutes)
        addAdminRoutes(to: admin, dependencies, services: services)
    }
    return router
}

/// The admin API's routes, in the group that checks the admin token.
private func addAdminRoutes(
    to admin: RouterGroup<OrchardRequestContext>, _ d: ApplicationDependencies, services: SharedServices
) {
    let (configuration, store, directory) = (d.configuration, d.store, d.directory)
    let retirement = TenantRetirement(
        store: store, directory: directory, processors: d.processors, lifecycle: services.mandates,
        webhooks: services.webhooks, time: d.time, logger: services.mandates.logger)
    let registry = MerchantRegistryService(
        store: store, directory: directory, apple: d.registration, retirement: retirement, processors: d.processors,
        processorMaker: d.processorMaker, time: d.time)
    admin.addRoutes(
        AdminController(
            merchants: configuration.merchants, platform: configuration.platform, directory: directory, registry: registry,
            sealer: RegisteredSettingsSealer(configuration)
        )
        .routes)
    admin.addRoutes(AdminPaymentsController(store: store, engine: services.engine).routes)
    admin.addRoutes(AdminKeysController(store: store, directory: directory, time: d.time).routes)
    admin.addRoutes(
        AdminWebhooksController(
            store: store, time: d.time, directory: directory, transport: d.shopCalls, timeout: configuration.webhooks.timeout
        )
        .routes)
    admin.addRoutes(AdminGuardController(records: store, time: d.time).routes)
    admin.addRoutes(
        AdminDoctorController(
            configuration: configuration, sessions: d.sessions, domainProbe: d.domainProbe, signer: d.vault.domainFileSigner, time: d.time
        ).routes)
    admin.addRoutes(
        AdminMandatesController(
            store: store, directory: directory, configuredMerchants: configuration.merchants.map(\.merchantIdentifier),
            lifecycle: services.mandates
        ).routes)
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
private func backgroundServices(_ d: ApplicationDependencies, services shared: SharedServices) -> [any Service] {
    let (configuration, store, time, directory, logger) = (d.configuration, d.store, d.time, d.directory, d.logger)
    var services: [any Service] = [
        PaymentReconciler(engine: shared.engine, interval: configuration.reconciliation.reconcileInterval, logger: logger),
        PaymentRequestExpiry(store: store, interval: .seconds(15), time: time, logger: logger),
        RetentionPurge(store: store, policy: configuration.retention, time: time, logger: logger),
        StoreReadiness(store: store, activity: d.activity, logger: logger),
    ]
    if configuration.guardSettings.enabled {
        let settings = configuration.guardSettings
        let service = GuardService(
            records: store, probe: d.domainProbe, tenantProbe: d.tenantDomainProbe, signer: d.vault.domainFileSigner,
            registration: d.registration, registry: store, policy: settings.policy,
            concurrency: settings.concurrency, time: time, logger: logger)
        services.append(
            GuardMonitor(service: service, configuration: configuration, directory: directory, records: store, time: time, logger: logger))
    }
    if configuration.platform != nil {
        // Instances sharing one database learn each other's registrations within this interval.
        services.append(
            RegistrySync(
                store: store, directory: directory, processors: d.processors, processorMaker: d.processorMaker,
                interval: .seconds(2), logger: logger))
    }
    if let metrics = configuration.metrics {
        services.append(
            OperationalGauges(
                store: store, certificates: configuration.certificates, time: time, interval: metrics.refreshInterval, logger: logger))
    }
    if let tokenEvents = shared.tokenEvents {
        services.append(tokenEvents)
    }
    if let webhooks = shared.webhooks {
        services.append(webhooks)
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
    ///
    /// The SDK's origin (one exact host) joins the fetch directives its code window may use:
    /// its scripts, styles, fonts and images, its requests and its frames, as PSPs that ship it
    /// allow (`default-src` with that origin). Objects, media, workers and manifests stay closed.
    public var contentSecurityPolicy: String {
        let sdk = applePaySDK.flatMap(Self.origin).map { " \($0)" } ?? ""
        return [
            "default-src 'none'", "script-src 'self'\(sdk)", "style-src 'self'\(sdk)", "img-src 'self' data:\(sdk)",
            "connect-src 'self'\(sdk)", "frame-src \(sdk.isEmpty ? "'none'" : String(sdk.dropFirst()))", "font-src 'self'\(sdk)",
            "manifest-src 'self'", "base-uri 'none'", "form-action 'self'", "frame-ancestors 'none'",
        ].joined(separator: "; ")
    }

    static func origin(_ url: URL) -> String? {
        guard let scheme = url.scheme?.lowercased(), let host = url.host?.lowercased() else { return nil }
        let bracketed = host.contains(":") ? "[\(host)]" : host
        return url.port.map { "\(scheme)://\(bracketed):\($0)" } ?? "\(scheme)://\(bracketed)"
    }
}
