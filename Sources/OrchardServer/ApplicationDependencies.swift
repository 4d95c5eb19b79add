import ApplePay
import Foundation
import Logging
import OrchardCore
import OrchardServices

/// Runs the doctor's checks for `/admin/doctor`: `live` asks Apple for a session per domain,
/// `domains` fetches each domain's association file.
public typealias DoctorRun = @Sendable (_ live: Bool, _ domains: Bool) async -> DoctorReport

/// What the application is built from: its HTTP settings, the services it shares with the loops
/// beside it, and the adapters the composition root (or a test harness) chose.
/// ``buildApplication(_:onServerRunning:)`` only wires them into routes.
public struct ApplicationDependencies: Sendable {
    /// What the routes read from the configuration.
    public var settings: HTTPSettings
    /// The payments engine, the mandate lifecycle and the background loops, made once.
    public var services: ServerServices
    /// Where merchant sessions come from (Apple's gateway in production).
    public var sessions: any MerchantSessionService
    /// Orders, payments and everything else kept, one repository per field: each route is given
    /// the ones it uses, and a test puts a failing one in its field.
    public var repositories: Repositories
    /// Where each merchant's authorized payments go; the registry's routes keep registered
    /// merchants' processors in step.
    public var processors: PaymentProcessors
    /// Seals payment requests' secrets and signs this server's association files.
    public var vault: PaymentVault
    /// The clock for certificate checks and payment records.
    public var time: TimeSource
    /// The demo's simulated payment sheet; nil everywhere else.
    public var simulator: (any SimulatedApplePay)?
    /// Configured and registered merchants.
    public var directory: MerchantDirectory
    /// Apple's Web Merchant Registration API, for the admin API.
    public var registration: (any MerchantRegistrationService)?
    /// Makes registered merchants' processors from their settings; nil: they record only.
    public var processorMaker: (any ProcessorMaker)?
    /// Checks and seals registered merchants' settings; nil: no settings key, none can be set.
    public var settingsSealer: RegisteredSettingsSealer?
    /// Asks merchants' quote URLs and sends the admin API's test webhooks; nil: Orchard prices
    /// every change itself.
    public var shopCalls: (any ShopTransport)?
    /// The doctor behind `/admin/doctor`; nil: the route is not served.
    public var doctor: DoctorRun?
    /// What `/health` answers (ready once the server listens) and the requests in flight; whoever
    /// begins a graceful shutdown calls `beginDraining()` on it first.
    public var activity: ServerActivity
    public var logger: Logger

    /// Dependencies as given; the composition root's `ApplicationDependencies(configuration:…)`
    /// makes them from a loaded configuration.
    public init(
        settings: HTTPSettings, services: ServerServices, sessions: any MerchantSessionService, repositories: Repositories,
        processors: PaymentProcessors, vault: PaymentVault, time: TimeSource, simulator: (any SimulatedApplePay)?,
        directory: MerchantDirectory, registration: (any MerchantRegistrationService)?, processorMaker: (any ProcessorMaker)?,
        settingsSealer: RegisteredSettingsSealer?, shopCalls: (any ShopTransport)?, doctor: DoctorRun?, activity: ServerActivity,
        logger: Logger
    ) {
        self.settings = settings
        self.services = services
        self.sessions = sessions
        self.repositories = repositories
        self.processors = processors
        self.vault = vault
        self.time = time
        self.simulator = simulator
        self.directory = directory
        self.registration = registration
        self.processorMaker = processorMaker
        self.settingsSealer = settingsSealer
        self.shopCalls = shopCalls
        self.doctor = doctor
        self.activity = activity
        self.logger = logger
    }
}
