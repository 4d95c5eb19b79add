import ApplePay
import Foundation
import Logging
import Metrics
import OrchardCore
import ServiceLifecycle

/// Delivers the webhook outbox: every due event is signed and POSTed to its merchant's
/// endpoint; a 2xx marks it delivered, anything else (or no answer) schedules the next try
/// along ``WebhookPolicy``. The schedule lives in the store, so deliveries survive restarts; an
/// event is marked delivered only after a 2xx, so it is sent at least once. Events are leased
/// from the store, so instances sharing a database do not send the same event at once.
public struct WebhookDispatcher: Service {
    let store: any OrchardStore
    let transport: any ShopTransport
    let directory: MerchantDirectory
    let policy: WebhookPolicy
    let time: TimeSource
    let logger: Logger

    public init(
        store: any OrchardStore, transport: any ShopTransport, directory: MerchantDirectory, policy: WebhookPolicy,
        time: TimeSource, logger: Logger
    ) {
        self.store = store
        self.transport = transport
        self.directory = directory
        self.policy = policy
        self.time = time
        self.logger = logger
    }

    public func run() async throws {
        await repeatUntilShutdown(every: policy.pollInterval) { _ = await deliverDue() }
    }

    /// One pass over the due events: merchants in parallel, each merchant's events in order.
    /// Returns how many were leased.
    public func deliverDue(limit: Int = 100) async -> Int {
        let due: [WebhookEvent]
        let now = time.now
        // Never shorter than one attempt, whatever the policy says.
        let leaseEnd = now.addingTimeInterval(Self.seconds(max(policy.lease, policy.timeout * 2)))
        do {
            due = try await store.leaseWebhookEvents(at: now, until: leaseEnd, limit: limit)
        } catch {
            logger.error("the webhook outbox could not be read", metadata: ["error": "\(error)"])
            return 0
        }
        let byMerchant = Dictionary(grouping: due, by: \.merchantIdentifier)
        let timeout = Self.seconds(policy.timeout)
        await withTaskGroup(of: Void.self) { group in
            for events in byMerchant.values {
                group.addTask {
                    // An attempt that could outlast the lease is left to the next pass: another
                    // instance may take the event once the lease is over.
                    for event in events where time.now.addingTimeInterval(timeout) < leaseEnd { await deliver(event) }
                }
            }
        }
        return due.count
    }

    static func seconds(_ duration: Duration) -> TimeInterval {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }

    func deliver(_ event: WebhookEvent) async {
        var metadata: Logger.Metadata = [
            "event": "\(event.id)", "type": "\(event.type.rawValue)", "merchant": "\(event.merchantIdentifier)",
            "attempt": "\(event.attempts + 1)",
        ]
        guard let endpoint = directory.merchant(identifier: event.merchantIdentifier)?.webhook else {
            await record(event, .skipped, status: nil, error: "the merchant has no webhook endpoint", next: nil)
            return
        }
        let now = time.now
        let headers: [(name: String, value: String)] = [
            (name: "Content-Type", value: "application/json"),
            (
                name: WebhookSignature.header,
                value: WebhookSignature.sign(body: event.payload, secret: endpoint.secret, timestamp: Int64(now.timeIntervalSince1970))
            ),
            (name: "Orchard-Event-Id", value: event.id), (name: "Orchard-Event-Type", value: event.type.rawValue),
            (name: "User-Agent", value: "Orchard-Webhooks/1"),
        ]
        var status: Int?
        var failure: String?
        do {
            status = try await transport.post(to: endpoint, headers: headers, body: event.payload, timeout: policy.timeout).status
        } catch {
            failure = "\(error)"
        }
        if let status, (200..<300).contains(status) {
            await record(event, .delivered, status: status, error: nil, next: nil)
            return
        }
        let next = policy.nextAttempt(after: event.attempts + 1, createdAt: event.createdAt, now: time.now)
        let reason = failure ?? "the endpoint answered HTTP \(status ?? 0)"
        metadata["error"] = "\(reason)"
        if let next {
            metadata["retryAt"] = "\(next)"
            logger.warning("webhook not delivered; retrying", metadata: metadata)
        } else {
            logger.error("webhook not delivered within the retry window; `orchard webhooks replay` sends it again", metadata: metadata)
        }
        await record(event, next == nil ? .failed : .pending, status: status, error: reason, next: next)
    }

    func record(_ event: WebhookEvent, _ state: WebhookEvent.DeliveryState, status: Int?, error: String?, next: Date?) async {
        // A still-pending event after an attempt is a retry to come.
        Counter(label: "orchard_webhook_deliveries_total", dimensions: [("outcome", state == .pending ? "retry" : state.rawValue)])
            .increment()
        let result = WebhookDeliveryResult(
            eventId: event.id, attempt: event.attempts, state: state, status: status, error: error.map { String($0.prefix(500)) },
            at: time.now, nextAttemptAt: next)
        do {
            _ = try await store.recordDelivery(result)
        } catch {
            logger.error("a webhook attempt could not be recorded; it will be sent again", metadata: ["event": "\(event.id)"])
        }
    }
}

/// Moves open payment requests past their expiry to `expired` (with their webhook), every `interval`.
public struct PaymentRequestExpiry: Service {
    let store: any OrchardStore
    let interval: Duration
    let time: TimeSource
    let logger: Logger

    public init(store: any OrchardStore, interval: Duration, time: TimeSource, logger: Logger) {
        self.store = store
        self.interval = interval
        self.time = time
        self.logger = logger
    }

    public func run() async throws {
        await repeatUntilShutdown(every: interval) {
            do {
                let expired = try await store.expireOrders(at: time.now, limit: 500)
                if !expired.isEmpty { logger.info("payment requests expired", metadata: ["count": "\(expired.count)"]) }
            } catch {
                logger.error("expired payment requests could not be closed", metadata: ["error": "\(error)"])
            }
        }
    }
}
