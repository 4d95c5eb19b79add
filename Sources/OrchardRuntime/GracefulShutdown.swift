import Logging
import OrchardServer
import OrchardServices
import ServiceLifecycle
import Synchronization
import UnixSignals

/// Runs the server's services until SIGTERM or SIGINT, then shuts down in order: the public
/// listener stops accepting and finishes the requests in flight, then the background services
/// (webhooks, reconciler, expiry, certificate checks) end their current pass, then the metrics
/// listener closes, then the store's connections (PostgreSQL's pool: ``servicesInShutdownOrder``).
/// What is still running when `configuration.drainTimeout` has passed is
/// cancelled: a request then gets no answer (the connection closes), and the process still exits 0.
///
/// Tests pass no `signals` and shut the group down themselves through `started`, which is given
/// the group before it runs.
func runUntilSignalled(
    _ services: [any Service], drainTimeout: Duration, activity: ServerActivity, logger: Logger,
    signals: [UnixSignal] = [.sigterm, .sigint], started: (ServiceGroup) -> Void = { _ in }
) async throws {
    let announcer = ShutdownAnnouncer(activity: activity, drainTimeout: drainTimeout, logger: logger)
    // A service group shuts its services down last first: the announcer, then the public server.
    var configuration = ServiceGroupConfiguration(services: services + [announcer], gracefulShutdownSignals: signals, logger: logger)
    configuration.maximumGracefulShutdownDuration = drainTimeout
    // Everything Orchard awaits honours cancellation; a stuck call would otherwise hold the exit forever.
    configuration.maximumCancellationDuration = .seconds(10)
    let group = ServiceGroup(configuration: configuration)
    started(group)
    do {
        try await group.run()
    } catch is CancellationError where activity.isDraining {
        // The drain timeout passed and the rest was cancelled: the shutdown asked for is done.
    }
    if let started = announcer.started, ContinuousClock.now - started >= drainTimeout {
        logger.warning("the drain timeout passed: requests and background work still running were cut")
    }
    logger.notice("Orchard stopped")
}

/// The first service told of a shutdown: marks the server draining and logs what it waits for.
final class ShutdownAnnouncer: Service {
    let activity: ServerActivity
    let drainTimeout: Duration
    let logger: Logger
    private let startedAt = Mutex<ContinuousClock.Instant?>(nil)

    init(activity: ServerActivity, drainTimeout: Duration, logger: Logger) {
        self.activity = activity
        self.drainTimeout = drainTimeout
        self.logger = logger
    }

    /// When the shutdown began; nil while serving.
    var started: ContinuousClock.Instant? { startedAt.withLock { $0 } }

    func run() async throws {
        try await gracefulShutdown()
        startedAt.withLock { $0 = .now }
        activity.beginDraining()
        logger.notice(
            "shutting down: no new connections; finishing requests in flight, then background work",
            metadata: ["inFlight": "\(activity.inFlight)", "drainTimeoutSeconds": "\(drainTimeout.components.seconds)"])
    }
}
