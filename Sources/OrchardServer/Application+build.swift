import ApplePay
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import OrchardCore
import OrchardServices
import ServiceLifecycle

/// Builds the Orchard application from its dependencies: routes, static files and the services
/// behind them. `onServerRunning` is called with the bound port once the server listens.
public func buildApplication(
    _ dependencies: ApplicationDependencies, onServerRunning: @escaping @Sendable (Int) async -> Void = { _ in }
) -> some ApplicationProtocol {
    let settings = dependencies.settings
    let router = buildRouter(dependencies)
    let activity = dependencies.activity
    var app = Application(
        router: router,
        // A connection idle (or stuck in half a request) past the timeout is closed, so slow clients cannot hold sockets.
        server: .http1(
            configuration: .init(idleTimeout: .nanoseconds(Int64(settings.idleTimeout.components.seconds) * 1_000_000_000))),
        configuration: .init(address: .hostname(settings.host, port: settings.port), serverName: "Orchard"),
        onServerRunning: { channel in
            activity.markReady()
            await onServerRunning(channel.localAddress?.port ?? 0)
        },
        logger: dependencies.logger)
    // The loops beside the server run in its lifetime and stop with it.
    for service in dependencies.services.background {
        app.addServices(service)
    }
    return app
}

/// The public port's middleware and routes (the OpenAPI document lists the same routes; `OpenAPITests` compare them):
/// what `buildApplication` serves, and what router tests send requests to in process.
public func buildRouter(_ dependencies: ApplicationDependencies) -> Router<OrchardRequestContext> {
    let d = dependencies
    let (settings, stored, services, time, directory, logger) = (d.settings, d.repositories, d.services, d.time, d.directory, d.logger)
    let router = Router(context: OrchardRequestContext.self)
    router.add(middleware: RequestTracingMiddleware(accept: settings.acceptTraceparent, trustedProxies: settings.trustedProxies))
    router.add(middleware: HTTPMetricsMiddleware(activity: d.activity))
    router.add(middleware: SecurityHeadersMiddleware(contentSecurityPolicy: settings.contentSecurityPolicy))
    router.add(middleware: JSONErrorsMiddleware())
    // Each request's line is logged at debug; the level is set once at startup, so above it the
    // middleware would only cost its call on every request.
    if logger.logLevel <= .debug {
        router.add(middleware: LogRequestsMiddleware(.debug))
    }
    addStaticFiles(to: router, folder: settings.publicDirectory, time: time, logger: logger)
    router.addRoutes(DomainAssociationController(directory: directory, signer: d.signer).routes)
    // Who the client is and which merchant its Host names matter to the routes below only: a
    // static file, a 404 (no route matched) or the association file is answered without either.
    let routes = router.group()
        .add(middleware: EventLoopExecutorMiddleware())
        .add(middleware: ClientAddressMiddleware(trustedProxies: settings.trustedProxies, header: settings.clientAddressHeader))
        .add(middleware: MerchantMiddleware(directory: directory, maxBodyBytes: settings.maxBodyBytes))
    let limiter = RateLimiter(settings: settings.limits, time: time)
    routes.addRoutes(OpenAPIController().routes)
    routes.addRoutes(MerchantSessionController(maxBodyBytes: settings.maxBodyBytes, sessions: d.sessions, limiter: limiter).routes)
    let health = HealthController(
        merchants: directory.merchants, certificates: settings.certificates, directory: directory, time: time,
        activity: d.activity)
    routes.addRoutes(health.routes)
    routes.addRoutes(OrdersController(service: services.orders, limiter: limiter).routes)
    routes.addRoutes(AuthorizeController(engine: services.engine, walletOrders: services.walletOrders, limiter: limiter).routes)
    routes.addRoutes(GooglePayAuthorizeController(engine: services.engine, walletOrders: services.walletOrders, limiter: limiter).routes)
    let v1 = routes.group("v1").add(middleware: APIKeyMiddleware(store: stored.apiKeys, directory: directory))
    let paymentRequests = PaymentRequestsController(
        service: services.paymentRequests,
        simulatedSheet: d.simulator == nil ? nil : SimulatedSheetController.scriptPath, limiter: limiter,
        scriptTimeoutMs: settings.checkoutPage.timeoutMilliseconds)
    v1.addRoutes(paymentRequests.apiRoutes)
    v1.addRoutes(MerchantController().routes)
    v1.addRoutes(EventsController(outbox: stored.webhookOutbox).routes)
    routes.addRoutes(paymentRequests.pageRoutes)
    let paymentsAPI = PaymentsAPIController(
        refunds: stored.refunds, paymentRequests: stored.paymentRequests, engine: services.engine, walletOrders: services.walletOrders)
    v1.addRoutes(paymentsAPI.routes)
    v1.addRoutes(InAppAuthorizeController(requests: services.paymentRequests, payments: paymentsAPI, limiter: limiter).routes)
    v1.addRoutes(
        MandatesController(service: services.mandateCharges, lifecycle: services.mandates, walletOrders: services.walletOrders).routes)
    if let walletOrders = services.walletOrders {
        var paths = Set(directory.merchants.compactMap { $0.walletOrders.flatMap { URLComponents(string: $0.webServiceURL)?.path } })
        if directory.platform != nil { paths.insert(WalletOrdersSettings.registeredMerchantsPath) }
        routes.addRoutes(WalletOrdersController(service: walletOrders, paths: paths.sorted(), limiter: limiter).routes)
        v1.addRoutes(FulfillmentsController(service: walletOrders).routes)
    }
    if let usage = services.merchantTokenUsage {
        routes.addRoutes(MerchantTokenUsageController(service: usage, limiter: limiter).routes)
    }
    routes.addRoutes(
        TokenEventsController(
            store: stored.tokenEventInbox, directory: directory, policy: settings.tokenEvents, limiter: limiter,
            fetching: services.tokenEvents != nil,
            time: time
        ).routes)
    routes.addRoutes(
        CheckoutController(applePaySDK: settings.applePaySDK, page: settings.checkoutPage, simulator: d.simulator).routes)
    if let simulator = d.simulator {
        routes.addRoutes(SimulatedSheetController(maxBodyBytes: settings.maxBodyBytes, simulator: simulator).routes)
        if let googlePay = simulator.googlePay {
            routes.addRoutes(SimulatedGooglePayController(maxBodyBytes: settings.maxBodyBytes, simulator: googlePay).routes)
        }
    }
    if let token = settings.adminToken {
        // The one place the admin token is checked: every /admin route is in this group.
        let admin = routes.group("admin").add(middleware: AdminAuthMiddleware(token: token))
        admin.addRoutes(health.adminRoutes)
        addAdminRoutes(to: admin, dependencies)
    }
    return router
}

/// The admin API's routes, in the group that checks the admin token.
private func addAdminRoutes(to admin: RouterGroup<OrchardRequestContext>, _ d: ApplicationDependencies) {
    let (services, stored, directory) = (d.services, d.repositories, d.directory)
    admin.addRoutes(
        AdminController(
            merchants: directory.merchants, platform: directory.platform, directory: directory, registry: services.registry,
            sealer: d.settingsSealer
        )
        .routes)
    admin.addRoutes(AdminPaymentsController(store: stored.orderPayments, engine: services.engine).routes)
    admin.addRoutes(AdminKeysController(store: stored.apiKeys, directory: directory, time: d.time).routes)
    admin.addRoutes(
        AdminWebhooksController(
            store: stored.webhookOutbox, time: d.time, directory: directory, transport: d.shopCalls, timeout: d.settings.webhookTimeout
        )
        .routes)
    admin.addRoutes(AdminGuardController(records: stored.guardRecords, time: d.time).routes)
    if let doctor = d.doctor {
        admin.addRoutes(AdminDoctorController(doctor: doctor).routes)
    }
    admin.addRoutes(
        AdminMandatesController(
            store: stored.mandates, directory: directory, configuredMerchants: directory.merchants.map(\.merchantIdentifier),
            lifecycle: services.mandates
        ).routes)
    if let usage = services.merchantTokenUsage {
        admin.addRoutes(AdminUsageKeysController(service: usage).routes)
    }
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
