import Foundation
import Synchronization

/// How Apple's merchant token notifications are taken in and fetched: every decision about the
/// token-event inbox, in one place.
///
/// The notification URL is public and says nothing but an event ID, and every fetch is a call to
/// Apple under the merchant's identity. So a notification is only recorded (bounded per source),
/// and fetches are budgeted by who sent them: a **trusted** source, one whose last finished
/// event Apple confirmed, draws on the merchant's budget; any other source (a new one, or one
/// that sent an ID Apple did not know) draws on a small probation budget of its own, within a
/// probation budget per merchant. Made-up IDs therefore never spend what Apple's own
/// notifications need, and a source earns trust only with an event Apple vouched for.
public struct TokenEventPolicy: Sendable, Equatable {
    /// A token bucket: `perMinute` on average, `burst` at once.
    public struct Rate: Sendable, Equatable {
        public let perMinute: Int
        public let burst: Int

        /// Each at least 1: a budget of none would never refill.
        public init(perMinute: Int, burst: Int) {
            self.perMinute = max(1, perMinute)
            self.burst = max(1, burst)
        }

        var perSecond: Double { Double(perMinute) / 60 }
    }

    /// Fetches per merchant for events trusted sources notified: what Apple's own notifications use.
    public var merchantBudget = Rate(perMinute: 60, burst: 20)
    /// Fetches per untrusted source, all merchants together.
    public var probationPerSource = Rate(perMinute: 6, burst: 3)
    /// Fetches per merchant for untrusted sources together, so many sources cannot spend more.
    public var probationPerMerchant = Rate(perMinute: 12, burst: 6)
    /// Pending items an untrusted source may have; past it its notifications get 429 and are not recorded.
    public var maxPendingPerSource = 20
    /// Pending items a trusted source may have (Apple's, while Apple's gateway is down, say).
    public var maxPendingPerTrustedSource = 10_000
    /// The `Retry-After` of a 429 for a source with too many pending items.
    public var sourceFullRetryAfter = 60
    /// Items of one source leased per pass, so a source with many cannot crowd the others out.
    public var perSourcePerPass = 1
    /// Items leased per pass.
    public var batch = 50
    /// How often the inbox is read for due items.
    public var pollInterval: Duration = .seconds(1)
    /// How long a pass holds the items it took; at least two fetches' deadlines in practice.
    public var lease: Duration = .seconds(60)
    /// Retries when Apple cannot be asked: from `firstRetry`, doubling up to `maximumRetry`,
    /// until `retryWindow` after the notification; then the item is `failed`.
    public var firstRetry: Duration = .seconds(30)
    public var maximumRetry: Duration = .seconds(3600)
    public var retryWindow: Duration = .seconds(72 * 3600)

    public init() {}

    /// Whether a source's events draw on the merchant's budget: Apple confirmed the last event of
    /// it that finished, and has not since said it did not know one.
    public func isTrusted(_ standing: TokenEventSourceStanding) -> Bool {
        guard let confirmed = standing.lastConfirmed else { return false }
        guard let refuted = standing.lastRefuted else { return true }
        return refuted < confirmed
    }

    /// How many pending items a source may have.
    public func maxPending(trusted: Bool) -> Int {
        trusted ? maxPendingPerTrustedSource : maxPendingPerSource
    }

    /// Whether an item still waiting for its budget at `now` is given up (`failed`): it has
    /// waited the whole retry window, so a flood cannot keep items pending for ever.
    public func givesUpWaiting(createdAt: Date, now: Date) -> Bool {
        let window = Double(retryWindow.components.seconds)
        return now.timeIntervalSince(createdAt) > window
    }

    /// When an item whose fetch failed `attempts` times (this one included) is next tried; nil: give up.
    public func nextAttempt(after attempts: Int, createdAt: Date, now: Date) -> Date? {
        // The webhook outbox's backoff, with this inbox's numbers.
        WebhookPolicy(firstRetry: firstRetry, maximumRetry: maximumRetry, retryWindow: retryWindow)
            .nextAttempt(after: attempts, createdAt: createdAt, now: now)
    }
}

/// The fetch budgets of ``TokenEventPolicy``, as token buckets in this process's memory (with N
/// instances the effective budgets are N times the policy's, as for the rate limits).
///
/// Memory stays bounded: a bucket that has refilled is the same as no bucket and is dropped by a
/// sweep once a minute, and buckets are only made for items the inbox leased, a bounded batch
/// per pass.
public final class TokenEventBudgets: Sendable {
    /// Whose budget a fetch spends.
    public enum Allowance: String, Sendable {
        case merchant, probation
    }

    public enum Decision: Sendable, Equatable {
        case fetch(Allowance)
        /// No budget left: try again at this time.
        case wait(until: Date)
    }

    struct Key: Hashable {
        enum Kind { case merchant, probationMerchant, probationSource }
        var kind: Kind
        var subject: String
    }

    struct Bucket {
        var tokens: Double
        var updated: TimeInterval
    }

    public let policy: TokenEventPolicy
    private let state = Mutex<(buckets: [Key: Bucket], lastSweep: TimeInterval)>(([:], 0))

    public init(policy: TokenEventPolicy) {
        self.policy = policy
    }

    /// Takes one fetch for `merchant`'s event from `source`: from the merchant's budget when the
    /// source is trusted, else from the source's and the merchant's probation budgets (both or
    /// neither).
    public func admit(merchant: String, source: String, trusted: Bool, now date: Date) -> Decision {
        let wanted: [(Key, TokenEventPolicy.Rate)] =
            trusted
            ? [(Key(kind: .merchant, subject: merchant), policy.merchantBudget)]
            : [
                (Key(kind: .probationSource, subject: source), policy.probationPerSource),
                (Key(kind: .probationMerchant, subject: merchant), policy.probationPerMerchant),
            ]
        let now = date.timeIntervalSince1970
        return state.withLock { state in
            if now - state.lastSweep >= 60 || now < state.lastSweep { sweep(&state, now: now) }
            var refilled: [(Key, Bucket)] = []
            var wait: TimeInterval = 0
            for (key, rate) in wanted {
                var bucket = state.buckets[key] ?? Bucket(tokens: Double(rate.burst), updated: now)
                bucket.tokens = min(Double(rate.burst), bucket.tokens + max(0, now - bucket.updated) * rate.perSecond)
                bucket.updated = now
                if bucket.tokens < 1 { wait = max(wait, (1 - bucket.tokens) / rate.perSecond) }
                refilled.append((key, bucket))
            }
            guard wait == 0 else { return .wait(until: date.addingTimeInterval(wait)) }
            for (key, var bucket) in refilled {
                bucket.tokens -= 1
                state.buckets[key] = bucket
            }
            return .fetch(trusted ? .merchant : .probation)
        }
    }

    /// Buckets kept now (for tests).
    public var trackedBuckets: Int { state.withLock { $0.buckets.count } }

    private func sweep(_ state: inout (buckets: [Key: Bucket], lastSweep: TimeInterval), now: TimeInterval) {
        state.lastSweep = now
        state.buckets = state.buckets.filter { key, bucket in
            let rate = rate(for: key.kind)
            return bucket.tokens + max(0, now - bucket.updated) * rate.perSecond < Double(rate.burst)
        }
    }

    private func rate(for kind: Key.Kind) -> TokenEventPolicy.Rate {
        switch kind {
        case .merchant: policy.merchantBudget
        case .probationMerchant: policy.probationPerMerchant
        case .probationSource: policy.probationPerSource
        }
    }
}
