import ApplePay
import Foundation
import Logging
import Metrics
import OrchardCore
import ServiceLifecycle
import Synchronization

/// Delivers the webhook outbox: every due event is signed and POSTed to its merchant's
/// endpoint; a 2xx marks it delivered, anything else (or no answer) schedules the next try
/// along ``WebhookPolicy``. The schedule lives in the store, so deliveries survive restarts; an
/// event is marked delivered only after a 2xx, so it is sent at least once. Events are leased
/// from the store, so instances sharing a database do not send the same event at once.
///
/// Each merchant's endpoint has a worker of its own: a pass leases a batch for every merchant
/// with due events whose worker is idle (``WebhookLease``), and never waits for a slow one, so a
/// merchant with a large backlog or an endpoint that hangs delays only its own events.
public struct WebhookDispatcher: Service {
    let store: any WebhookOutbox
    let transport: any ShopTransport
    let directory: MerchantDirectory
    let policy: WebhookPolicy
    let time: TimeSource
    let logger: Logger
    /// Merchants an event was found for with no endpoint: their due events are skipped in one
    /// statement a pass, not leased and recorded one by one (a commit each per payment).
    let endpointless = Endpointless()

    public init(
        store: any WebhookOutbox, transport: any ShopTransport, directory: MerchantDirectory, policy: WebhookPolicy,
        time: TimeSource, logger: Logger
    ) {
        self.store = store
        self.transport = transport
        self.directory = directory
        self.policy = policy
        self.time = time
        self.logger = logger
    }

    /// The merchants whose batch a worker is sending now.
    final class BusyMerchants: Sendable {
        private let state = Mutex<Set<String>>([])
        var merchants: Set<String> { state.withLock { $0 } }
        func insert(_ merchant: String) { state.withLock { _ = $0.insert(merchant) } }
        func remove(_ merchant: String) { state.withLock { _ = $0.remove(merchant) } }
    }

    /// The merchants seen without a webhook endpoint; one that has one again leaves at the next pass.
    final class Endpointless: Sendable {
        private let state = Mutex<Set<String>>([])
        func insert(_ merchant: String) { state.withLock { _ = $0.insert(merchant) } }
        /// Those still without an endpoint in `directory`; the others are forgotten.
        func current(in directory: MerchantDirectory) -> Set<String> {
            state.withLock { merchants in
                merchants = merchants.filter { directory.webhook(for: $0) == nil }
                return merchants
            }
        }
    }

    /// One batch: a merchant's due events, oldest first, held until `leaseEnd`.
    struct Batch: Sendable {
        var merchant: String
        var events: [WebhookEvent]
        var leaseEnd: Date
    }

    public func run() async throws {
        let busy = BusyMerchants()
        // Workers outlive the pass that started them; at shutdown the group waits for them (an
        // attempt in flight finishes) until the drain timeout cancels it.
        // A full batch leaves more of its merchant's events behind: the next pass starts when it
        // is done, not at the next poll. Waiting for the poll capped each merchant at one batch
        // a poll (10 events a second by default), fewer than a busy shop's payments.
        let more = WakeUp()
        await withDiscardingTaskGroup { group in
            await repeatUntilShutdown(every: policy.pollInterval, wakeUp: more) {
                // One time for the pass: what the skip leaves due, the lease does not take either.
                let now = time.now
                await skipEndpointless(at: now)
                for batch in await leaseDue(busy: busy.merchants, at: now) {
                    busy.insert(batch.merchant)
                    group.addTask {
                        await deliver(batch)
                        busy.remove(batch.merchant)
                        if batch.events.count >= policy.batchPerMerchant { more.signal() }
                    }
                }
            }
        }
    }

    /// Tries each of a merchant's pending events once, now, oldest first: for a merchant about to
    /// be retired, whose endpoint goes with it. At most 100 events, started within two
    /// attempts' deadlines; what is not delivered stays pending (and is then skipped). Not
    /// leased: another instance may send one of them at the same moment, which webhooks'
    /// at-least-once delivery (one event ID) already allows for.
    public func deliverPending(merchant: String) async -> Int {
        guard let pending = try? await store.webhookEvents(merchantIdentifier: merchant, state: .pending, limit: 100) else { return 0 }
        let deadline = time.now.addingTimeInterval(2 * policy.timeout.timeInterval)
        var tried = 0
        for event in pending.reversed() where time.now < deadline {
            await deliver(event)
            tried += 1
        }
        return tried
    }

    static let noEndpoint = "the merchant has no webhook endpoint"

    /// Skips the due events of the merchants seen without an endpoint that still have none.
    func skipEndpointless(at now: Date? = nil) async {
        let merchants = endpointless.current(in: directory)
        guard !merchants.isEmpty else { return }
        do {
            let skipped = try await store.skipWebhookEvents(of: merchants, at: now ?? time.now, reason: Self.noEndpoint)
            if skipped > 0 {
                Counter(label: "orchard_webhook_deliveries_total", dimensions: [("outcome", "skipped")]).increment(by: skipped)
            }
        } catch {
            logger.error("the webhook outbox could not be written", metadata: ["error": "\(error)"])
        }
    }

    /// Leases a batch for each merchant with due events that is not `busy` here.
    func leaseDue(busy: Set<String>, at date: Date? = nil) async -> [Batch] {
        guard let lease = policy.lease(busy: busy) else { return [] }
        let now = date ?? time.now
        let leaseEnd = now.addingTimeInterval(policy.batchLease.timeInterval)
        let due: [WebhookEvent]
        do {
            due = try await store.leaseWebhookEvents(at: now, until: leaseEnd, fairly: lease)
        } catch {
            logger.error("the webhook outbox could not be read", metadata: ["error": "\(error)"])
            return []
        }
        var order: [String] = []
        var byMerchant: [String: [WebhookEvent]] = [:]
        for event in due {
            if byMerchant[event.merchantIdentifier] == nil { order.append(event.merchantIdentifier) }
            byMerchant[event.merchantIdentifier, default: []].append(event)
        }
        return order.map { Batch(merchant: $0, events: byMerchant[$0] ?? [], leaseEnd: leaseEnd) }
    }

    /// A merchant's batch, `concurrencyPerEndpoint` attempts at a time. An attempt that could
    /// outlast the lease is left to a later pass: another instance may take the event once the
    /// lease is over.
    func deliver(_ batch: Batch) async {
        let timeout = policy.timeout.timeInterval
        let width = max(1, policy.concurrencyPerEndpoint)
        var start = batch.events.startIndex
        while start < batch.events.endIndex, time.now.addingTimeInterval(timeout) < batch.leaseEnd {
            let round = batch.events[start..<min(start + width, batch.events.endIndex)]
            await withDiscardingTaskGroup { group in
                for event in round { group.addTask { await deliver(event) } }
            }
            start = round.endIndex
        }
    }

    func deliver(_ event: WebhookEvent) async {
        var metadata: Logger.Metadata = [
            "event": "\(event.id)", "type": "\(event.type.rawValue)", "merchant": "\(event.merchantIdentifier)",
            "attempt": "\(event.attempts + 1)",
        ]
        guard let endpoint = directory.webhook(for: event.merchantIdentifier) else {
            endpointless.insert(event.merchantIdentifier)
            await record(event, .skipped, status: nil, error: Self.noEndpoint, next: nil)
            return
        }
        let headers = endpoint.deliveryHeaders(
            eventId: event.id, type: event.type.rawValue, merchantIdentifier: event.merchantIdentifier, body: event.payload, at: time.now)
        var status: Int?
        var failure: String?
        do {
            status = try await transport.post(
                to: endpoint, headers: headers, body: event.payload, timeout: policy.timeout, merchant: event.merchantIdentifier
            ).status
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

/// A retiring merchant's last events go out through the dispatcher (``TenantRetirement``).
extension WebhookDispatcher: PendingDeliveries {}
