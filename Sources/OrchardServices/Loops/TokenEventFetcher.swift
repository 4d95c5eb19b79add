import ApplePay
import Foundation
import Logging
import Metrics
import OrchardCore
import ServiceLifecycle

/// Works the token-event inbox: every due notification's event is fetched from Apple over
/// mutual TLS and applied (``MandateLifecycle/fetchAndApply(eventId:merchantIdentifier:)``).
/// Items are leased from the store a few per source at a time, so instances sharing a database
/// do not fetch the same event at once and one source's backlog cannot hold up another's; each
/// fetch spends the budget ``TokenEventBudgets`` gives its source, or waits for it. When Apple
/// cannot be asked the item is retried along ``TokenEventPolicy``, then `failed` and logged.
public struct TokenEventFetcher: Service {
    let store: any TokenEventInbox
    let lifecycle: MandateLifecycle
    let budgets: TokenEventBudgets
    /// One call to Apple's deadline: a pass never holds items for less than two of them.
    let gatewayTimeout: Duration
    let time: TimeSource
    let logger: Logger

    /// A fetcher of `store`'s due items, through `lifecycle`, within `budgets`.
    public init(
        store: any TokenEventInbox, lifecycle: MandateLifecycle, budgets: TokenEventBudgets, gatewayTimeout: Duration, time: TimeSource,
        logger: Logger
    ) {
        self.store = store
        self.lifecycle = lifecycle
        self.budgets = budgets
        self.gatewayTimeout = gatewayTimeout
        self.time = time
        self.logger = logger
    }

    var policy: TokenEventPolicy { budgets.policy }

    public func run() async throws {
        await repeatUntilShutdown(every: policy.pollInterval) { _ = await fetchDue() }
    }

    /// One pass over the due items: budgets decided in lease order, admitted fetches in
    /// parallel. Returns how many were leased.
    public func fetchDue() async -> Int {
        let now = time.now
        let leaseEnd = now.addingTimeInterval(max(policy.lease, gatewayTimeout * 2).timeInterval)
        let due: [TokenEventItem]
        let standings: [String: TokenEventSourceStanding]
        do {
            due = try await store.leaseTokenEvents(at: now, until: leaseEnd, perSource: policy.perSourcePerPass, limit: policy.batch)
            standings = due.isEmpty ? [:] : try await store.tokenEventStandings(sources: Array(Set(due.map(\.source))))
        } catch {
            logger.error("the token-event inbox could not be read", metadata: ["error": "\(error)"])
            return 0
        }
        var admitted: [TokenEventItem] = []
        for item in due {
            let trusted = policy.isTrusted(standings[item.source] ?? .unknown)
            switch budgets.admit(merchant: item.merchantIdentifier, source: item.source, trusted: trusted, now: now) {
            case .fetch: admitted.append(item)
            case .wait where policy.givesUpWaiting(createdAt: item.createdAt, now: now):
                logger.error(
                    "a merchant token notification waited its whole retry window for a fetch budget: given up",
                    metadata: ["merchant": "\(item.merchantIdentifier)", "event": "\(item.eventId)", "source": "\(item.source)"])
                await record(item, .failed, error: "never fetched: its source's budget was spent", outcome: "failed")
            case .wait(let until):
                await record(item, .pending, counted: false, error: nil, next: until, outcome: "postponed")
            }
        }
        await withTaskGroup(of: Void.self) { group in
            for item in admitted { group.addTask { await fetch(item) } }
        }
        return due.count
    }

    func fetch(_ item: TokenEventItem) async {
        var metadata: Logger.Metadata = [
            "merchant": "\(item.merchantIdentifier)", "event": "\(item.eventId)", "source": "\(item.source)",
            "attempt": "\(item.attempts + 1)",
        ]
        switch await lifecycle.fetchAndApply(eventId: item.eventId, merchantIdentifier: item.merchantIdentifier) {
        case .applied:
            await record(item, .applied, error: nil, outcome: "applied")
        case .unknownEvent:
            await record(item, .unknown, error: "Apple does not know this event", outcome: "unknown")
        case .noMerchant:
            let reason = "no merchant Orchard can ask Apple for under this identifier (unregistered, or not configured)"
            logger.error("a merchant token notification cannot be fetched: \(reason)", metadata: metadata)
            await record(item, .failed, error: reason, outcome: "failed")
        case .refused(let reason):
            logger.error("a merchant token event cannot be asked for", metadata: metadata.merging(["error": "\(reason)"]) { $1 })
            await record(item, .failed, error: reason, outcome: "failed")
        case .unavailable(let reason):
            metadata["error"] = "\(reason)"
            guard let next = policy.nextAttempt(after: item.attempts + 1, createdAt: item.createdAt, now: time.now) else {
                logger.error(
                    "a merchant token event could not be fetched from Apple within the retry window: check the mandates of this merchant's token by hand",
                    metadata: metadata)
                await record(item, .failed, error: reason, outcome: "failed")
                return
            }
            metadata["retryAt"] = "\(next)"
            logger.warning("a merchant token event could not be fetched from Apple; retrying", metadata: metadata)
            await record(item, .pending, error: reason, next: next, outcome: "retry")
        }
    }

    func record(
        _ item: TokenEventItem, _ state: TokenEventItem.State, counted: Bool = true, error: String?, next: Date? = nil, outcome: String
    ) async {
        Counter(label: "orchard_token_event_fetches_total", dimensions: [("outcome", outcome)]).increment()
        let attempt = TokenEventAttempt(
            itemId: item.id, attempts: item.attempts, state: state, counted: counted, error: error.map { String($0.prefix(500)) },
            at: time.now, nextAttemptAt: next)
        do {
            _ = try await store.recordTokenEventAttempt(attempt)
        } catch {
            // The item stays pending and is leased again when its lease ends; applying the event
            // again is harmless (an UNLINK finds its mandates ended).
            logger.error(
                "a merchant token event's outcome could not be recorded; it will be fetched again",
                metadata: ["merchant": "\(item.merchantIdentifier)", "event": "\(item.eventId)"])
        }
    }
}
