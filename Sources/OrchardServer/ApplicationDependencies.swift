import ApplePay
import Foundation
import Logging
import OrchardCore
import OrchardServices

/// Runs the doctor's checks for `/admin/doctor`: `live` asks Apple for a session per domain,
/// `domains` fetches each domain's association file.
public typealias DoctorRun = @Sendable (_ live: Bool, _ domains: Bool) async -> DoctorReport

/// What the routes are built from: their HTTP settings, the services the composition root made
/// (shared with the loops beside the server), and the adapters a route reads directly.
/// ``buildApplication(_:onServerRunning:)`` only wires them into routes; the composition root
/// (`OrchardComposition`'s `ApplicationDependencies(configuration:…)`) or a router test's
/// `ApplicationDependencies.testing(…)` makes them.
public struct ApplicationDependencies: Sendable {
    /// What the routes read from the configuration.
    public var settings: HTTPSettings
    /// The payments engine, the Core services behind the routes, and the background loops, made once.
    public var services: ServerServices
    /// Where merchant sessions come from (Apple's gateway in production).
    public var sessions: any MerchantSessionService
    /// Orders, payments and everything else kept, one repository per field: each route is given
    /// the ones it uses, and a test puts a failing one in its field.
    public var repositories: Repositories
    /// Signs this server's association files (derived from the payment vault's key).
    public var signer: DomainFileSigner
    /// The clock for certificate checks and payment records.
    public var time: TimeSource
    /// The demo's simulated payment sheet; nil everywhere else.
    public var simulator: (any SimulatedApplePay)?
    /// Configured and registered merchants.
    public var directory: MerchantDirectory
    /// Checks and seals registered merchants' settings; nil: no settings key, none can be set.
    public var settingsSealer: RegisteredSettingsSealer?
    /// Sends the admin API's test webhooks; nil: the shop is never called.
    public var shopCalls: (any ShopTransport)?
    /// The doctor behind `/admin/doctor`; nil: the route is not served.
    public var doctor: DoctorRun?
    /// What `/health` answers (ready once the server listens) and the requests in flight; whoever
    /// begins a graceful shutdown calls `beginDraining()` on it first.
    public var activity: ServerActivity
    public var logger: Logger

    /// Dependencies as given.
    public init(
        settings: HTTPSettings, services: ServerServices, sessions: any MerchantSessionService, repositories: Repositories,
        signer: DomainFileSigner, time: TimeSource, simulator: (any SimulatedApplePay)?, directory: MerchantDirectory,
        settingsSealer: RegisteredSettingsSealer?, shopCalls: (any ShopTransport)?, doctor: DoctorRun?, activity: ServerActivity,
        logger: Logger
    ) {
        self.settings = settings
        self.services = services
        self.sessions = sessions
        self.repositories = repositories
        self.signer = signer
        self.time = time
        self.simulator = simulator
        self.directory = directory
        self.settingsSealer = settingsSealer
        self.shopCalls = shopCalls
        self.doctor = doctor
        self.activity = activity
        self.logger = logger
    }
}
