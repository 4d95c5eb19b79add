import Logging
import OrchardCore
import ServiceLifecycle

/// Asks the store every `interval` whether it can serve (``OperationalCounting/checkAvailable()``)
/// and keeps the answer in ``ServerActivity``, where `/health` reads it: while the database
/// cannot be reached or the disk is full, a load balancer sees 503 `store_unavailable` within
/// `interval` plus the store's own bound (PostgreSQL's acquire timeout), and 200 again within
/// `interval` once it is back. Only a change is logged.
public struct StoreReadiness: Service {
    let store: any OperationalCounting
    let activity: ServerActivity
    var interval: Duration = .seconds(1)
    let logger: Logger

    /// Checks `store` every `interval` and tells `activity`.
    public init(store: any OperationalCounting, activity: ServerActivity, interval: Duration = .seconds(1), logger: Logger) {
        self.store = store
        self.activity = activity
        self.interval = interval
        self.logger = logger
    }

    public func run() async {
        // A request's store call that fails as unavailable, or gets an answer again, changes the
        // answer at once, without waiting for the next check.
        store.availability?.observe { [activity, logger] available in
            Self.record(available: available, error: nil, activity: activity, logger: logger)
        }
        await repeatUntilShutdown(every: interval) { await check() }
    }

    func check() async {
        do {
            try await store.checkAvailable()
            Self.record(available: true, error: nil, activity: activity, logger: logger)
        } catch {
            Self.record(available: false, error: error, activity: activity, logger: logger)
        }
    }

    /// Tells `activity`, and logs a change.
    static func record(available: Bool, error: (any Error)?, activity: ServerActivity, logger: Logger) {
        guard activity.storeChecked(available: available) else { return }
        if available {
            logger.notice("the store can be reached again: /health answers ready")
        } else {
            logger.error(
                "the store cannot be reached: /health answers 503 and requests that need it 503 store_unavailable until it can",
                metadata: error.map { ["error": "\($0)"] } ?? [:])
        }
    }
}
