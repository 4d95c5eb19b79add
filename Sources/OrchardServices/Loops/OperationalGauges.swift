import ApplePay
import Foundation
import Logging
import Metrics
import OrchardCore
import ServiceLifecycle
import X509

/// Keeps the metrics gauges that describe state rather than events: payments by state and the
/// oldest unknown one's age, the webhook outbox's and the token-event inbox's backlogs (cheap count queries every `interval`), and each configured
/// certificate's days left. Runs only when a metrics listener is configured.
///
/// Labels stay bounded: states are a fixed list, and certificates are named by their configured
/// owner (a merchant ID from the configuration file, or the platform), kind and serial number;
/// merchants registered through the admin API never become labels.
public struct OperationalGauges: Service {
    let store: any OperationalCounting
    let certificates: [ConfiguredCertificate]
    let time: TimeSource
    let interval: Duration
    let logger: Logger

    public init(
        store: any OperationalCounting, certificates: [ConfiguredCertificate], time: TimeSource, interval: Duration = .seconds(15),
        logger: Logger
    ) {
        self.store = store
        self.certificates = certificates
        self.time = time
        self.interval = interval
        self.logger = logger
    }

    public func run() async throws {
        var countsStore = true
        await repeatUntilShutdown(every: interval) {
            recordCertificates()
            if countsStore { countsStore = await recordStore() }
        }
    }

    /// Sets every certificate's days-left gauge.
    public func recordCertificates() {
        let now = time.now
        for entry in certificates {
            Gauge(
                label: "orchard_certificate_days_left",
                dimensions: [("owner", entry.owner), ("kind", entry.kind), ("serial", "\(entry.certificate.serialNumber)")]
            ).record(entry.daysLeft(at: now))
        }
    }

    /// Sets the store's gauges; false when the store cannot count (then it is not asked again).
    @discardableResult
    public func recordStore() async -> Bool {
        let counts: OperationalCounts?
        do {
            counts = try await store.operationalCounts()
        } catch {
            logger.warning("the store could not be counted for the metrics", metadata: ["error": "\(error)"])
            return true
        }
        guard let counts else {
            logger.notice("this store does not count payments: orchard_payments and the webhook queue gauges are left out")
            return false
        }
        for state in PaymentState.allCases {
            Gauge(label: "orchard_payments", dimensions: [("state", state.rawValue)]).record(counts.payments[state] ?? 0)
        }
        Gauge(label: "orchard_webhook_queue_depth").record(counts.pendingWebhooks)
        let age = counts.oldestPendingWebhook.map { max(0, time.now.timeIntervalSince($0)) } ?? 0
        Gauge(label: "orchard_webhook_oldest_pending_age_seconds").record(age)
        Gauge(label: "orchard_token_event_queue_depth").record(counts.pendingTokenEvents)
        let inboxAge = counts.oldestPendingTokenEvent.map { max(0, time.now.timeIntervalSince($0)) } ?? 0
        Gauge(label: "orchard_token_event_oldest_pending_age_seconds").record(inboxAge)
        let unknownAge = counts.oldestUnknownPayment.map { max(0, time.now.timeIntervalSince($0)) } ?? 0
        Gauge(label: "orchard_payments_unknown_oldest_age_seconds").record(unknownAge)
        return true
    }
}
