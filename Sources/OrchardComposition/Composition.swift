import ApplePay
import Foundation
import Logging
import OrchardConfiguration
import OrchardCore
import OrchardServer
import OrchardServices
import ServiceLifecycle

extension ApplicationDependencies {
    /// The application made from a loaded configuration: its HTTP settings, every service the
    /// routes and the loops beside the server use, those loops, and the doctor. This is the one
    /// place services are made; `buildRouter` only wires them. Adapters left out are those of a
    /// server that calls nobody: record-only processors, the configured vault (else a random key),
    /// the configured merchants only, no Apple APIs beyond `sessions`, no shop calls.
    /// `repositories`, when given, replaces the ones made from `store` (a test puts a failing
    /// repository in one field). `serveChecks` are the doctor's first lines (`orchard serve`'s own
    /// checks of the store it runs on); the doctor's other lines check each piece.
    public init(
        configuration: ServerConfiguration, sessions: any MerchantSessionService, store: some OrchardStore,
        repositories: Repositories? = nil, processors: PaymentProcessors = .recordOnly, vault: PaymentVault? = nil,
        time: TimeSource = .system,
        simulator: (any SimulatedApplePay)? = nil, directory: MerchantDirectory? = nil,
        registration: (any MerchantRegistrationService)? = nil, merchantTokens: (any MerchantTokenService)? = nil,
        domainProbe: (any DomainProbe)? = nil, tenantDomainProbe: (any DomainProbe)? = nil, processorMaker: (any ProcessorMaker)? = nil,
        shopCalls: (any ShopTransport)? = nil, serveChecks: (@Sendable () async -> [DoctorCheck])? = nil,
        walletPusher: (any WalletOrderPusher)? = nil, activity: ServerActivity = ServerActivity(),
        logger: Logger = Logger(label: "orchard")
    ) {
        let parts = Parts(
            configuration: configuration, stored: repositories ?? Repositories(store), processors: processors,
            vault: vault ?? configuration.vault ?? .ephemeral(),
            time: time, directory: directory ?? MerchantDirectory(configuration: configuration), registration: registration,
            merchantTokens: merchantTokens, domainProbe: domainProbe, tenantDomainProbe: tenantDomainProbe,
            processorMaker: processorMaker, shopCalls: shopCalls, walletPusher: walletPusher, activity: activity, logger: logger)
        // `orchard doctor`'s report: serve's own lines (the store included), then each piece's.
        let doctor: DoctorRun = { [vault = parts.vault] live, domains in
            let pieces = await Doctor(
                sessions: live ? sessions : nil, probe: domains ? domainProbe : nil, signer: vault.domainFileSigner, time: time
            ).check(configuration: configuration)
            return DoctorReport(checks: (await serveChecks?() ?? []) + pieces.checks)
        }
        self.init(
            settings: configuration.httpSettings, services: parts.services(), sessions: sessions, repositories: parts.stored,
            signer: parts.vault.domainFileSigner, time: time, simulator: simulator, directory: parts.directory,
            settingsSealer: configuration.settingsSealer, shopCalls: shopCalls, doctor: doctor, activity: activity, logger: logger)
    }
}

extension ServerConfiguration {
    /// What the routes read.
    public var httpSettings: HTTPSettings {
        var settings = HTTPSettings(
            host: host, port: port, idleTimeout: idleTimeout, maxBodyBytes: maxBodyBytes, publicDirectory: publicDirectory,
            trustedProxies: trustedProxies, clientAddressHeader: clientAddressHeader, acceptTraceparent: acceptTraceparent,
            applePaySDK: applePaySDK, checkoutPage: checkoutPage, limits: limits, adminToken: adminToken,
            tokenEvents: tokenEvents, webhookTimeout: webhooks.timeout, certificates: certificates)
        // A path on this server is 'self' already.
        settings.googlePayScripts = merchants.compactMap { $0.googlePay?.scriptURL }.filter { $0.hasPrefix("https://") }
            .compactMap(URL.init(string:))
        return settings
    }
}

/// What the shared services and the loops are made from.
private struct Parts {
    let configuration: ServerConfiguration
    let stored: Repositories
    let processors: PaymentProcessors
    let vault: PaymentVault
    let time: TimeSource
    let directory: MerchantDirectory
    let registration: (any MerchantRegistrationService)?
    let merchantTokens: (any MerchantTokenService)?
    let domainProbe: (any DomainProbe)?
    let tenantDomainProbe: (any DomainProbe)?
    let processorMaker: (any ProcessorMaker)?
    let shopCalls: (any ShopTransport)?
    /// Sends Wallet order pushes (APNs); nil: they stay queued.
    let walletPusher: (any WalletOrderPusher)?
    let activity: ServerActivity
    let logger: Logger

    /// Every service, each made once and shared by the routes and the loops.
    func services() -> ServerServices {
        let walletOrders = WalletOrderService(store: stored.walletOrders, merchants: directory, time: time, logger: logger)
        var engine = configuration.makePaymentsEngine(
            repositories: stored, processors: processors, vault: vault, time: time, logger: logger)
        // A capture, cancellation or refund changes what Wallet shows: a new version, pushed. Without
        // a merchant that can have Wallet orders, the store is not asked on every such change.
        if offersWalletOrders {
            engine.onPaymentChanged = { paymentId in await walletOrders.paymentChanged(paymentId: paymentId) }
        }
        // An automatic capture is tried by the capture loop as soon as the authorization is
        // stored, never inside the shopper's request (its sheet waits for the authorization only).
        let captures = PaymentCapturer.Signal()
        engine.onCaptureDue = { _ in captures.signal() }
        let usage = merchantTokenUsage()
        var mandates = MandateLifecycle(
            store: stored.mandates, processors: processors, tokens: merchantTokens, directory: directory, time: time, logger: logger,
            tokenVerifier: engine.verifier)
        mandates.usage = usage
        let webhooks = shopCalls.map {
            WebhookDispatcher(
                store: stored.webhookOutbox, transport: $0, directory: directory, policy: configuration.webhooks, time: time, logger: logger
            )
        }
        let tokenEvents = merchantTokens.map { _ in
            TokenEventFetcher(
                store: stored.tokenEventInbox, lifecycle: mandates, budgets: TokenEventBudgets(policy: configuration.tokenEvents),
                gatewayTimeout: configuration.gateway.timeout, time: time, logger: logger)
        }
        let pushes = walletPushes()
        let announcements =
            merchantTokens == nil || !offersMerchantTokenUsage ? nil : MerchantTokenUsageLoop(service: usage, logger: logger)
        let background =
            backgroundServices(engine: engine, captures: captures)
            + [tokenEvents as (any Service)?, webhooks, pushes, announcements].compactMap { $0 }
        var mandateCharges = MandateChargeService(
            mandates: stored.mandates, paymentRequests: stored.paymentRequests, orderPayments: stored.orderPayments, engine: engine,
            time: time)
        if offersMerchantTokenUsage { mandateCharges.usage = usage }
        return ServerServices(
            engine: engine, mandates: mandates,
            orders: OrderService(
                orders: stored.orderPayments, paymentRequests: stored.paymentRequests,
                quotes: shopCalls.map { QuoteClient(transport: $0, time: time, logger: logger) }, time: time,
                openFor: configuration.ordersOpenFor.timeInterval),
            paymentRequests: PaymentRequestService(
                paymentRequests: stored.paymentRequests, orderPayments: stored.orderPayments, refunds: stored.refunds, vault: vault,
                time: time),
            mandateCharges: mandateCharges,
            registry: registry(mandates: mandates, webhooks: webhooks),
            webhooks: webhooks, tokenEvents: tokenEvents, background: background,
            walletOrders: walletOrders, merchantTokenUsage: usage)
    }

    /// Merchant token usage information: announced by a loop when a merchant has it on and
    /// Apple's token API is there; its device route answers in any case (404 for every token).
    private func merchantTokenUsage() -> MerchantTokenUsageService {
        let merchants = directory.merchants.filter { $0.merchantTokenUsage != nil }.map(\.merchantIdentifier)
        return MerchantTokenUsageService(
            store: stored.merchantTokenUsage, mandates: stored.mandates, orders: stored.orderPayments, tokens: merchantTokens,
            directory: directory, usageMerchants: { merchants }, vault: vault, time: time, logger: logger)
    }

    /// Whether a configured merchant has usage information on (registered merchants cannot, yet).
    private var offersMerchantTokenUsage: Bool {
        configuration.merchants.contains { $0.merchantTokenUsage != nil }
    }

    /// Whether any merchant can have Wallet orders: a configured one with them, or a registered one
    /// (a platform integrator is configured, whose merchants' settings may add them at any time).
    private var offersWalletOrders: Bool {
        configuration.platform != nil || configuration.merchants.contains { $0.walletOrders != nil }
    }

    /// The loop sending Wallet order pushes, when a merchant offers Wallet orders and something can send them.
    private func walletPushes() -> WalletOrderPushLoop? {
        guard let walletPusher, offersWalletOrders else { return nil }
        let sender = WalletOrderPushSender(
            store: stored.walletOrders, merchants: directory, pusher: walletPusher, time: time, logger: logger)
        return WalletOrderPushLoop(sender: sender, logger: logger)
    }

    /// The admin API's registry, with the retirement that winds a leaving tenant down.
    private func registry(mandates: MandateLifecycle, webhooks: WebhookDispatcher?) -> MerchantRegistryService {
        let retirement = TenantRetirement(
            merchantRegistry: stored.merchantRegistry, mandates: stored.mandates, apiKeys: stored.apiKeys, directory: directory,
            processors: processors, lifecycle: mandates, webhooks: webhooks, time: time, logger: mandates.logger)
        return MerchantRegistryService(
            merchantRegistry: stored.merchantRegistry, directory: directory, apple: registration, retirement: retirement,
            processors: processors, processorMaker: processorMaker, time: time)
    }

    /// The loops beside the server: expiry, reconciliation, automatic capture, purges, store readiness, and those the
    /// configuration asks for (the guard, registry sync, gauges).
    private func backgroundServices(engine: PaymentsEngine, captures: PaymentCapturer.Signal) -> [any Service] {
        var services: [any Service] = [
            PaymentReconciler(engine: engine, interval: configuration.reconciliation.reconcileInterval, logger: logger),
            PaymentCapturer(
                engine: engine, interval: configuration.reconciliation.reconcileInterval, signal: captures, logger: logger),
            PaymentRequestExpiry(store: stored.paymentRequests, interval: .seconds(15), time: time, logger: logger),
            RetentionPurge(store: stored.purging, policy: configuration.retention, time: time, logger: logger),
            StoreReadiness(store: stored.counting, activity: activity, logger: logger),
        ]
        if configuration.guardSettings.enabled {
            let settings = configuration.guardSettings
            let service = GuardService(
                records: stored.guardRecords, probe: domainProbe, tenantProbe: tenantDomainProbe, signer: vault.domainFileSigner,
                registration: registration, registry: stored.merchantRegistry, policy: settings.policy, concurrency: settings.concurrency,
                time: time,
                logger: logger)
            services.append(GuardMonitor(service: service, directory: directory, records: stored.guardRecords, time: time, logger: logger))
        }
        if configuration.platform != nil {
            // Instances sharing one database learn each other's registrations within this interval.
            services.append(
                RegistrySync(
                    store: stored.merchantRegistry, directory: directory, processors: processors, processorMaker: processorMaker,
                    openSettings: configuration.openSettings, interval: .seconds(2), logger: logger))
        }
        if let metrics = configuration.metrics {
            services.append(
                OperationalGauges(
                    store: stored.counting, certificates: configuration.certificates, time: time, interval: metrics.refreshInterval,
                    logger: logger))
        }
        return services
    }
}
