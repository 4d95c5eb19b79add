import ApplePay
import Foundation
import Hummingbird
import Logging
import OrchardCore
import OrchardServices
import Synchronization

/// Token buckets per client address and per merchant, in this process's memory (with N
/// instances the effective limit is N times the configured one).
///
/// Memory stays bounded: a bucket that has refilled is the same as no bucket and is dropped
/// by a sweep once a minute, and at most `maxTrackedClients` client buckets are kept (the
/// least recently used go first when a new client would pass the cap).
public final class RateLimiter: Sendable {
    /// Why a call was refused and when to try again.
    public struct Refusal: Sendable, Equatable {
        /// Whose bucket was empty.
        public enum Scope: Sendable, Equatable { case client, merchant }
        public var scope: Scope
        /// Whole seconds until the bucket holds a token again (at least 1).
        public var retryAfter: Int

        public init(scope: Scope, retryAfter: Int) {
            self.scope = scope
            self.retryAfter = retryAfter
        }
    }

    struct Key: Hashable {
        var action: RateLimitSettings.Action
        var scope: Refusal.Scope
        var subject: String
    }

    struct Bucket {
        var tokens: Double
        var updated: TimeInterval
    }

    struct State {
        var buckets: [Key: Bucket] = [:]
        var clients = 0
        var lastSweep: TimeInterval = 0
    }

    /// The rules in force (`limits`).
    public let settings: RateLimitSettings
    let time: TimeSource
    private let state = Mutex(State())

    public init(settings: RateLimitSettings, time: TimeSource) {
        self.settings = settings
        self.time = time
    }

    /// Takes one token from the client's and from the merchant's bucket for `action`, or from
    /// neither when either is empty. A nil client or merchant is not limited on that side.
    public func admit(_ action: RateLimitSettings.Action, client: String?, merchant: String?) -> Refusal? {
        var wanted: [(Key, RateLimit)] = []
        if let client, let rule = settings.perClient[action] { wanted.append((Key(action: action, scope: .client, subject: client), rule)) }
        if let merchant, let rule = settings.perMerchant[action] {
            wanted.append((Key(action: action, scope: .merchant, subject: merchant), rule))
        }
        guard !wanted.isEmpty else { return nil }
        let now = time.now.timeIntervalSince1970
        return state.withLock { state in
            if now - state.lastSweep >= 60 || now < state.lastSweep { sweep(&state, now: now) }
            var refilled: [(Key, Bucket)] = []
            for (key, rule) in wanted {
                var bucket = state.buckets[key] ?? Bucket(tokens: Double(rule.burst), updated: now)
                bucket.tokens = min(Double(rule.burst), bucket.tokens + max(0, now - bucket.updated) * rule.perSecond)
                bucket.updated = now
                guard bucket.tokens >= 1 else {
                    // Computed per minute, not from perSecond, so whole answers stay whole (60 / 1, not 1 / (1 / 60)).
                    let wait = (1 - bucket.tokens) * 60 / Double(rule.perMinute)
                    return Refusal(scope: key.scope, retryAfter: max(1, Int(wait.rounded(.up))))
                }
                refilled.append((key, bucket))
            }
            for (key, var bucket) in refilled {
                bucket.tokens -= 1
                if state.buckets.updateValue(bucket, forKey: key) == nil, key.scope == .client {
                    state.clients += 1
                    if state.clients > settings.maxTrackedClients { evict(&state, now: now, keeping: key) }
                }
            }
            return nil
        }
    }

    /// Buckets tracked now (for tests and metrics).
    public var trackedBuckets: Int { state.withLock { $0.buckets.count } }

    /// Drops every bucket that has refilled: it behaves exactly as a missing one.
    private func sweep(_ state: inout State, now: TimeInterval) {
        state.lastSweep = now
        state.buckets = state.buckets.filter { key, bucket in
            guard let rule = rule(for: key) else { return false }
            return bucket.tokens + max(0, now - bucket.updated) * rule.perSecond < Double(rule.burst)
        }
        state.clients = state.buckets.keys.count { $0.scope == .client }
    }

    /// Past the cap: sweep, and if that is not enough, drop the least recently used tenth of the
    /// client buckets at once, so a flood of new addresses costs one sort per many inserts.
    private func evict(_ state: inout State, now: TimeInterval, keeping: Key) {
        sweep(&state, now: now)
        guard state.clients > settings.maxTrackedClients else { return }
        let victims = state.buckets.filter { $0.key.scope == .client && $0.key != keeping }
            .sorted { $0.value.updated < $1.value.updated }
            .prefix(max(1, settings.maxTrackedClients / 10))
        for (key, _) in victims { state.buckets[key] = nil }
        state.clients -= victims.count
    }

    private func rule(for key: Key) -> RateLimit? {
        key.scope == .client ? settings.perClient[key.action] : settings.perMerchant[key.action]
    }
}

extension RateLimiter {
    /// Admits a call from this request's client for `merchant`, or throws the 429 to answer.
    func check(_ action: RateLimitSettings.Action, context: OrchardRequestContext, merchant: String?) throws(OrchardError) {
        // Without an address (a Unix socket), every such client shares one bucket.
        let client = context.clientAddress?.rateLimitKey ?? "unknown"
        guard let refusal = admit(action, client: client, merchant: merchant) else { return }
        let whose = refusal.scope == .client ? "from this address" : "for this shop"
        // Debug, not notice: a flood must not become a flood of log lines.
        context.logger.debug(
            "rate limit reached",
            metadata: [
                "action": "\(action.rawValue)", "scope": "\(refusal.scope)", "client": "\(client)", "merchant": "\(merchant ?? "")",
            ])
        throw OrchardError(
            .rateLimited, "too many \(action.noun) \(whose); try again in \(refusal.retryAfter) s", retryAfter: refusal.retryAfter)
    }
}
