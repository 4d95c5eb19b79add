import Foundation

/// A token bucket's shape: `perMinute` tokens a minute, at most `burst` saved up.
public struct RateLimit: Sendable, Equatable {
    public var perMinute: Int
    public var burst: Int

    public init(perMinute: Int, burst: Int) {
        self.perMinute = perMinute
        self.burst = burst
    }

    /// Tokens a second.
    public var perSecond: Double { Double(perMinute) / 60 }
}

/// The rates in force: each limited call's rule per client address and per merchant (absent: off).
public struct RateLimitSettings: Sendable {
    /// The calls that are limited.
    public enum Action: String, Sendable, CaseIterable {
        case merchantSessions, orders, paymentRequests, orderUpdates, authorizations, tokenEvents, walletOrders

        /// For messages: what was asked too often.
        public var noun: String {
            switch self {
            case .merchantSessions: "merchant-session requests"
            case .orders: "orders"
            case .paymentRequests: "payment requests"
            case .orderUpdates: "sheet updates"
            case .authorizations: "payment attempts"
            case .tokenEvents: "token notifications"
            case .walletOrders: "Wallet order calls"
            }
        }
    }

    /// Each action's bucket per client address (IPv4 address or IPv6 /64); absent: not limited.
    public var perClient: [Action: RateLimit]
    /// Each action's bucket per merchant; absent: not limited.
    public var perMerchant: [Action: RateLimit]
    /// The most client buckets kept at once.
    public var maxTrackedClients: Int

    /// Generous for shoppers (a sheet opens a session; a NAT shares an address) and for shops, tight for a script.
    /// A shopper changes the sheet a few times and pays once or twice; Apple notifies a merchant's
    /// token events a few at a time, from a few addresses.
    public static let defaults = RateLimitSettings(
        perClient: [
            .merchantSessions: RateLimit(perMinute: 30, burst: 10), .orders: RateLimit(perMinute: 60, burst: 20),
            .paymentRequests: RateLimit(perMinute: 600, burst: 100), .orderUpdates: RateLimit(perMinute: 120, burst: 30),
            .authorizations: RateLimit(perMinute: 30, burst: 10), .tokenEvents: RateLimit(perMinute: 60, burst: 20),
            .walletOrders: RateLimit(perMinute: 120, burst: 30),
        ],
        perMerchant: [
            .merchantSessions: RateLimit(perMinute: 1200, burst: 200), .orders: RateLimit(perMinute: 3000, burst: 300),
            .paymentRequests: RateLimit(perMinute: 600, burst: 100), .orderUpdates: RateLimit(perMinute: 6000, burst: 600),
            .authorizations: RateLimit(perMinute: 3000, burst: 300), .tokenEvents: RateLimit(perMinute: 600, burst: 100),
            .walletOrders: RateLimit(perMinute: 6000, burst: 600),
        ],
        maxTrackedClients: 100_000)

    public init(perClient: [Action: RateLimit], perMerchant: [Action: RateLimit], maxTrackedClients: Int) {
        self.perClient = perClient
        self.perMerchant = perMerchant
        self.maxTrackedClients = maxTrackedClients
    }
}
