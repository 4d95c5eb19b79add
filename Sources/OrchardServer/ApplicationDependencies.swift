import ApplePay
import Foundation
import Logging
import OrchardCore

/// What the application is built from: the loaded configuration and the adapters the composition
/// root (or a test harness) chose. ``buildApplication(_:onServerRunning:)`` only wires them.
public struct ApplicationDependencies: Sendable {
    /// The loaded, checked configuration.
    public var configuration: ServerConfiguration
    /// Where merchant sessions come from (Apple's gateway in production).
    public var sessions: any MerchantSessionService
    /// Orders, payments and everything else kept.
    public var store: any OrchardStore
    /// Where each merchant's authorized payments go. Registered merchants' processors are set by
    /// whoever builds these dependencies (``PaymentProcessors/register(_:maker:)``), and kept in
    /// step by the registry's own routes and sync afterwards.
    public var processors: PaymentProcessors
    /// Seals the requests kept for re-sending unknown payments: the configured `payments.vaultKey`,
    /// else the state folder's key file (`orchard serve`), else a random key (a restarted process
    /// then cannot re-send them).
    public var vault: PaymentVault
    /// The clock for certificate checks and payment records.
    public var time: TimeSource
    /// The demo's simulated payment sheet; nil everywhere else.
    public var simulator: (any SimulatedApplePay)?
    /// Configured and registered merchants.
    public var directory: MerchantDirectory
    /// Apple's Web Merchant Registration API, for the admin API.
    public var registration: (any MerchantRegistrationService)?
    /// Apple's Merchant Token Management API, for token events (fetched from the token-event
    /// inbox in the background) and unlinking; nil: neither.
    public var merchantTokens: (any MerchantTokenService)?
    /// Fetches domains' association files for `/admin/doctor?domains=true`.
    public var domainProbe: (any DomainProbe)?
    /// Fetches registered merchants' domains for the guard, only at public addresses; nil: not fetched.
    public var tenantDomainProbe: (any DomainProbe)?
    /// Makes registered merchants' processors from their settings; nil: they record only.
    public var processorMaker: (any ProcessorMaker)?
    /// Sends the webhook outbox to merchants' endpoints and asks their quote URLs; nil: events are
    /// kept, not sent, and Orchard prices every change itself.
    public var shopCalls: (any ShopTransport)?
    /// What `/health` answers (ready once the server listens) and the requests in flight; whoever
    /// begins a graceful shutdown calls `beginDraining()` on it first.
    public var activity: ServerActivity
    public var logger: Logger

    /// Dependencies with the defaults of a server that calls nobody: record-only processors, the
    /// configured vault (else a random key), the configured merchants only, no Apple APIs beyond
    /// `sessions`, no shop calls.
    public init(
        configuration: ServerConfiguration, sessions: any MerchantSessionService, store: any OrchardStore,
        processors: PaymentProcessors = .recordOnly, vault: PaymentVault? = nil, time: TimeSource = .system,
        simulator: (any SimulatedApplePay)? = nil, directory: MerchantDirectory? = nil,
        registration: (any MerchantRegistrationService)? = nil, merchantTokens: (any MerchantTokenService)? = nil,
        domainProbe: (any DomainProbe)? = nil, tenantDomainProbe: (any DomainProbe)? = nil, processorMaker: (any ProcessorMaker)? = nil,
        shopCalls: (any ShopTransport)? = nil,
        activity: ServerActivity = ServerActivity(),
        logger: Logger = Logger(label: "orchard")
    ) {
        self.configuration = configuration
        self.sessions = sessions
        self.store = store
        self.processors = processors
        self.vault = vault ?? configuration.vault ?? .ephemeral()
        self.time = time
        self.simulator = simulator
        self.directory = directory ?? MerchantDirectory(configuration: configuration)
        self.registration = registration
        self.merchantTokens = merchantTokens
        self.domainProbe = domainProbe
        self.tenantDomainProbe = tenantDomainProbe
        self.processorMaker = processorMaker
        self.shopCalls = shopCalls
        self.activity = activity
        self.logger = logger
    }
}

extension PaymentProcessors {
    /// Gives every merchant of `directory` with sealed settings the processor `maker` makes from
    /// them (record-only without a maker). Whoever assembles the application does it once, before
    /// serving; the admin routes and ``RegistrySync`` keep it in step afterwards.
    public func register(_ directory: MerchantDirectory, maker: (any ProcessorMaker)?) {
        for (partner, settings) in directory.settings {
            setRegistered(maker?.processor(for: settings.processor), forMerchant: partner)
        }
    }
}
