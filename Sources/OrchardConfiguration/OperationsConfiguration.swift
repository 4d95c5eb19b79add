import Foundation
import OrchardCore
import OrchardServices

extension ConfigurationFile {
    /// `orders`: the checkout page's orders (`POST /api/orders`).
    public struct Orders: Codable, Sendable {
        /// How long a new order takes payment (default 3600); then it expires.
        public var openForSeconds: Int?

        public init(openForSeconds: Int? = nil) {
            self.openForSeconds = openForSeconds
        }

        enum CodingKeys: String, CodingKey, CaseIterable { case openForSeconds }

        public init(from decoder: any Decoder) throws {
            try StrictKeys.check(decoder, known: CodingKeys.allCases.map(\.rawValue))
            let container = try decoder.container(keyedBy: CodingKeys.self)
            openForSeconds = try container.decodeIfPresent(Int.self, forKey: .openForSeconds)
        }
    }

    /// `retention`: how long finished rows are kept before the hourly purge deletes them.
    /// Payments and refunds are never deleted.
    public struct Retention: Codable, Sendable {
        /// Expired orders that never had a payment, with their payment requests (default 30; 0 keeps them).
        public var expiredOrdersDays: Int?
        /// Delivered webhook events, counted from delivery (default 30; 0 keeps them).
        public var deliveredWebhooksDays: Int?
        /// Failed and skipped webhook events, counted from creation (default 90; 0 keeps them).
        public var failedWebhooksDays: Int?
        /// Apple's token notifications once their event is applied, unknown or failed, counted from then (default 30; 0 keeps them).
        public var tokenEventsDays: Int?

        public init(
            expiredOrdersDays: Int? = nil, deliveredWebhooksDays: Int? = nil, failedWebhooksDays: Int? = nil, tokenEventsDays: Int? = nil
        ) {
            self.expiredOrdersDays = expiredOrdersDays
            self.deliveredWebhooksDays = deliveredWebhooksDays
            self.failedWebhooksDays = failedWebhooksDays
            self.tokenEventsDays = tokenEventsDays
        }

        enum CodingKeys: String, CodingKey, CaseIterable {
            case expiredOrdersDays, deliveredWebhooksDays, failedWebhooksDays, tokenEventsDays
        }

        public init(from decoder: any Decoder) throws {
            try StrictKeys.check(decoder, known: CodingKeys.allCases.map(\.rawValue))
            let container = try decoder.container(keyedBy: CodingKeys.self)
            expiredOrdersDays = try container.decodeIfPresent(Int.self, forKey: .expiredOrdersDays)
            deliveredWebhooksDays = try container.decodeIfPresent(Int.self, forKey: .deliveredWebhooksDays)
            failedWebhooksDays = try container.decodeIfPresent(Int.self, forKey: .failedWebhooksDays)
            tokenEventsDays = try container.decodeIfPresent(Int.self, forKey: .tokenEventsDays)
        }
    }
}

extension ServerConfiguration {
    /// The sections this file adds, resolved onto a configuration `resolve` built.
    mutating func resolveOperations(_ file: ConfigurationFile, values: any ConfigurationReader) throws(ConfigurationError) {
        limits = try Self.resolveLimits(file.limits)
        outbound = try Self.resolveOutbound(file.outbound, values: values)
        retention = try Self.resolveRetention(file.retention)
        tokenEvents = try Self.resolveTokenEvents(file.tokenEvents)
        guardSettings = try Self.resolveGuard(file.guard)
        let open = file.orders?.openForSeconds ?? 3600
        guard (60...604_800).contains(open) else { throw ConfigurationError("orders.openForSeconds must be 60–604800") }
        ordersOpenFor = .seconds(open)
        let idle = file.server?.idleTimeoutSeconds ?? 60
        guard (1...3600).contains(idle) else { throw ConfigurationError("server.idleTimeoutSeconds must be 1–3600") }
        idleTimeout = .seconds(idle)
        // Default: a proxy on this machine, the setup docs/operations.md describes. Without it every
        // shopper behind a local nginx would share the loopback address's bucket.
        trustedProxies = try (file.server?.trustedProxies ?? ["127.0.0.0/8", "::1"]).map { entry throws(ConfigurationError) in
            guard let network = IPNetwork(entry) else {
                throw ConfigurationError(
                    "server.trustedProxies: \(entry) is not an address or CIDR block (like 10.0.0.5, 10.0.0.0/8 or fd00::/8)")
            }
            return network
        }
        let header = file.server?.clientAddressHeader ?? "X-Forwarded-For"
        guard ["x-forwarded-for", "x-real-ip"].contains(header.lowercased()) else {
            throw ConfigurationError("server.clientAddressHeader must be X-Forwarded-For or X-Real-IP")
        }
        clientAddressHeader = header
        if let accept = file.server?.acceptTraceparent {
            guard let trust = TraceparentTrust(rawValue: accept) else {
                throw ConfigurationError(
                    "server.acceptTraceparent must be \"trustedProxies\", \"anyone\" or \"nobody\", not \(accept.debugDescription)")
            }
            acceptTraceparent = trust
        }
    }

    static func resolveRetention(_ file: ConfigurationFile.Retention?) throws(ConfigurationError) -> RetentionPolicy {
        var policy = RetentionPolicy()
        func days(_ value: Int?, _ name: String, default fallback: Duration?) throws(ConfigurationError) -> Duration? {
            guard let value else { return fallback }
            guard (0...3650).contains(value) else { throw ConfigurationError("retention.\(name) must be 0 (keep) to 3650") }
            return value == 0 ? nil : .seconds(value * 86_400)
        }
        policy.expiredOrders = try days(file?.expiredOrdersDays, "expiredOrdersDays", default: policy.expiredOrders)
        policy.deliveredWebhooks = try days(file?.deliveredWebhooksDays, "deliveredWebhooksDays", default: policy.deliveredWebhooks)
        policy.failedWebhooks = try days(file?.failedWebhooksDays, "failedWebhooksDays", default: policy.failedWebhooks)
        policy.finishedTokenEvents = try days(file?.tokenEventsDays, "tokenEventsDays", default: policy.finishedTokenEvents)
        return policy
    }
}
