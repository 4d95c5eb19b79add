import ApplePay
import Foundation
import OrchardCore
import OrchardServices
import WalletOrders
import X509

/// Everything the server needs, loaded and checked at startup.
public struct ServerConfiguration: Sendable {
    public var host: String
    public var port: Int
    /// The folder of static files that replaces the built-in checkout page; nil: the built-in page.
    public var publicDirectory: String?
    public var maxBodyBytes: Int
    /// Apple's gateway origin; `isProductionHost` is false for a test gateway (logged as a warning).
    public var gateway: RemoteEndpoint
    public var merchants: [MerchantConfiguration]
    /// The root payment tokens chain to (Apple's unless a test root is configured), and their age window.
    public var tokenRoot: Certificate
    public var tokenPolicy: TokenVerifier.Policy
    /// How stale payments are found and unknown ones re-sent in the background (`payments.reconcile*`).
    public var reconciliation: PaymentsEngine.Policy
    /// The payment vault when `payments.vaultKey` is configured; nil: the key file in the state folder.
    public var vault: PaymentVault?
    /// True when a test token root replaces Apple's; logged as a warning.
    public var trustsTestTokenRoot: Bool
    /// The folder holding the SQLite database.
    public var stateDirectory: String
    /// Where the page loads Apple's JS SDK from; nil: not loaded.
    public var applePaySDK: URL?
    /// How the page loads it: its SRI hash and how long it waits for it.
    public var checkoutPage = CheckoutPageSettings()
    /// The platform integrator, as a merchant without domains: the template for registered merchants.
    public var platform: MerchantConfiguration?
    /// The admin API's bearer token; nil turns the admin API off.
    public var adminToken: AdminToken?
    /// How webhooks are retried.
    public var webhooks = WebhookPolicy()
    /// The processor types this program is built with, for settings given through the admin API.
    public var processorDrivers: [any ProcessorDriver] = [RecordOnlyDriver()]
    /// Seals registered merchants' settings (`platformIntegrator.settingsKey`); nil: none can be set.
    public var settingsVault: SettingsVault?
    /// The Prometheus listener (`metrics`); nil: none.
    public var metrics: MetricsListener?
    /// The `log` section: format and level, unless the command line says otherwise.
    public var log = LogSettings()
    /// Where spans are exported (`tracing.otlp`); nil: nowhere. Only a build with the OTel trait exports.
    public var traceExport: TraceExportSettings?
    /// How long a SIGTERM waits for in-flight requests and background work (`server.drainTimeoutSeconds`).
    public var drainTimeout = ServerConfiguration.defaultDrainTimeout
    /// Rates, outbound bounds, client timeouts, order expiry and retention (OperationsConfiguration.swift).
    public var limits = RateLimitSettings.defaults
    public var outbound = OutboundSettings()
    public var retention = RetentionPolicy()
    /// The token-event inbox's budgets, caps and timing (`tokenEvents`).
    public var tokenEvents = TokenEventPolicy()
    /// The guard of domains, certificates and registrations (`guard`).
    public var guardSettings = GuardSettings()
    public var ordersOpenFor: Duration = .seconds(3600)
    public var idleTimeout: Duration = .seconds(60)
    public var trustedProxies: [IPNetwork] = []
    public var clientAddressHeader = "X-Forwarded-For"
    /// Whose `traceparent` a request's span continues (``TraceparentTrust``).
    public var acceptTraceparent = TraceparentTrust.trustedProxies
    /// The store: SQLite in `stateDirectory`, or PostgreSQL.
    public var store: StoreSettings = .sqlite
    /// The clock certificates were checked by at load, and registered merchants' are checked by.
    public var time: TimeSource = .system

    /// Every certificate Orchard holds, for `/health` and expiry warnings.
    public var certificates: [ConfiguredCertificate] {
        var list: [ConfiguredCertificate] = []
        for merchant in merchants + (platform.map { [$0] } ?? []) {
            let owner = merchant.domains.isEmpty ? "platform \(merchant.merchantIdentifier)" : merchant.merchantIdentifier
            list.append(
                ConfiguredCertificate(
                    owner: owner, kind: "identity", source: merchant.identitySource, certificate: merchant.identity.certificate))
            if let wallet = merchant.walletOrders {
                list.append(
                    ConfiguredCertificate(
                        owner: owner, kind: "orderType", source: wallet.identitySource, certificate: wallet.identity.certificate))
            }
            for key in merchant.processingKeys {
                if let certificate = key.certificate {
                    list.append(ConfiguredCertificate(owner: owner, kind: "processing", source: nil, certificate: certificate))
                }
            }
        }
        return list
    }

}

extension MerchantDirectory {
    /// A directory of the configuration's merchants and platform integrator, and `registered`
    /// merchants with their `settings`.
    public convenience init(
        configuration: ServerConfiguration, registered: [RegisteredMerchant] = [], settings: [String: MerchantSettings] = [:]
    ) {
        self.init(merchants: configuration.merchants, platform: configuration.platform, registered: registered, settings: settings)
    }
}
