import Foundation
import OrchardCore
import OrchardServices

extension ConfigurationFile {
    /// `limits`: token-bucket rates for the calls that cost Orchard (or Apple) work, per client
    /// address and per merchant, kept in each process's memory.
    public struct Limits: Codable, Sendable {
        /// `POST /api/apple-pay/session`.
        public var merchantSessions: RateRules?
        /// `POST /api/orders`.
        public var orders: RateRules?
        /// `POST /v1/payment-requests` (the merchant is the API key's).
        public var paymentRequests: RateRules?
        /// `POST /api/orders/{id}/shipping-contact`, `/shipping-method`, `/coupon`, `/payment-method`:
        /// each may call the shop's quote URL.
        public var orderUpdates: RateRules?
        /// `POST /api/apple-pay/authorize`: each verifies a token and may call the processor.
        public var authorizations: RateRules?
        /// `GET /apple-pay/token-events/…`: Apple's notifications, per source address and per merchant.
        public var tokenEvents: RateRules?
        /// The Wallet order web service (every call Wallet makes), per client address and per merchant.
        public var walletOrders: RateRules?
        /// The most client addresses tracked at once (default 100000); the least recently seen go first.
        public var maxTrackedClients: Int?

        public init(
            merchantSessions: RateRules? = nil, orders: RateRules? = nil, paymentRequests: RateRules? = nil,
            orderUpdates: RateRules? = nil, authorizations: RateRules? = nil, tokenEvents: RateRules? = nil,
            maxTrackedClients: Int? = nil
        ) {
            self.merchantSessions = merchantSessions
            self.orders = orders
            self.paymentRequests = paymentRequests
            self.orderUpdates = orderUpdates
            self.authorizations = authorizations
            self.tokenEvents = tokenEvents
            self.maxTrackedClients = maxTrackedClients
        }

        enum CodingKeys: String, CodingKey, CaseIterable {
            case merchantSessions, orders, paymentRequests, orderUpdates, authorizations, tokenEvents, walletOrders, maxTrackedClients
        }

        public init(from decoder: any Decoder) throws {
            try StrictKeys.check(decoder, known: CodingKeys.allCases.map(\.rawValue))
            let container = try decoder.container(keyedBy: CodingKeys.self)
            merchantSessions = try container.decodeIfPresent(RateRules.self, forKey: .merchantSessions)
            orders = try container.decodeIfPresent(RateRules.self, forKey: .orders)
            paymentRequests = try container.decodeIfPresent(RateRules.self, forKey: .paymentRequests)
            orderUpdates = try container.decodeIfPresent(RateRules.self, forKey: .orderUpdates)
            authorizations = try container.decodeIfPresent(RateRules.self, forKey: .authorizations)
            tokenEvents = try container.decodeIfPresent(RateRules.self, forKey: .tokenEvents)
            walletOrders = try container.decodeIfPresent(RateRules.self, forKey: .walletOrders)
            maxTrackedClients = try container.decodeIfPresent(Int.self, forKey: .maxTrackedClients)
        }
    }

    /// One call's rates: each absent rule keeps its default; `{"perMinute": 0}` turns it off.
    public struct RateRules: Codable, Sendable {
        public var perClientIP: Rate?
        public var perMerchant: Rate?

        public init(perClientIP: Rate? = nil, perMerchant: Rate? = nil) {
            self.perClientIP = perClientIP
            self.perMerchant = perMerchant
        }

        enum CodingKeys: String, CodingKey, CaseIterable { case perClientIP, perMerchant }

        public init(from decoder: any Decoder) throws {
            try StrictKeys.check(decoder, known: CodingKeys.allCases.map(\.rawValue))
            let container = try decoder.container(keyedBy: CodingKeys.self)
            perClientIP = try container.decodeIfPresent(Rate.self, forKey: .perClientIP)
            perMerchant = try container.decodeIfPresent(Rate.self, forKey: .perMerchant)
        }
    }

    /// A bucket: `perMinute` calls a minute on average, `burst` at once (default: a sixth of a minute's worth, at least 1).
    public struct Rate: Codable, Sendable {
        public var perMinute: Int
        public var burst: Int?

        public init(perMinute: Int, burst: Int? = nil) {
            self.perMinute = perMinute
            self.burst = burst
        }

        enum CodingKeys: String, CodingKey, CaseIterable { case perMinute, burst }

        public init(from decoder: any Decoder) throws {
            try StrictKeys.check(decoder, known: CodingKeys.allCases.map(\.rawValue))
            let container = try decoder.container(keyedBy: CodingKeys.self)
            perMinute = try container.decode(Int.self, forKey: .perMinute)
            burst = try container.decodeIfPresent(Int.self, forKey: .burst)
        }
    }

    /// `outbound`: calls Orchard makes (Apple, processors, the shops' webhooks and quotes).
    public struct Outbound: Codable, Sendable {
        /// The proxy for every outbound call (`http://`, `https://` or `socks5h://` host and port).
        /// Absent: none, whatever `http_proxy`, `HTTPS_PROXY` or `ALL_PROXY` say.
        public var proxy: String?
        /// The most calls in flight at once per client (default 256).
        public var maxTransfers: Int?
        /// The most calls in flight to one host (default 64).
        public var maxConcurrentPerHost: Int?
        /// The most merchant-session calls to Apple in flight for one merchant (default 16).
        public var maxConcurrentPerMerchant: Int?
        /// Calls in flight to one merchant's shop, webhooks and quotes together (default 8).
        public var maxShopCallsPerMerchant: Int?
        /// Where registered merchants' webhooks, quote URLs and processors may go besides public
        /// addresses and the processors' own origins (tests, private deployments).
        public var registeredMerchants: RegisteredMerchants?

        public init(
            proxy: String? = nil, maxTransfers: Int? = nil, maxConcurrentPerHost: Int? = nil, maxConcurrentPerMerchant: Int? = nil,
            maxShopCallsPerMerchant: Int? = nil, registeredMerchants: RegisteredMerchants? = nil
        ) {
            self.maxShopCallsPerMerchant = maxShopCallsPerMerchant
            self.proxy = proxy
            self.maxTransfers = maxTransfers
            self.maxConcurrentPerHost = maxConcurrentPerHost
            self.maxConcurrentPerMerchant = maxConcurrentPerMerchant
            self.registeredMerchants = registeredMerchants
        }

        enum CodingKeys: String, CodingKey, CaseIterable {
            case proxy, maxTransfers, maxConcurrentPerHost, maxConcurrentPerMerchant, maxShopCallsPerMerchant, registeredMerchants
        }

        public init(from decoder: any Decoder) throws {
            try StrictKeys.check(decoder, known: CodingKeys.allCases.map(\.rawValue))
            let container = try decoder.container(keyedBy: CodingKeys.self)
            proxy = try container.decodeIfPresent(String.self, forKey: .proxy)
            maxTransfers = try container.decodeIfPresent(Int.self, forKey: .maxTransfers)
            maxConcurrentPerHost = try container.decodeIfPresent(Int.self, forKey: .maxConcurrentPerHost)
            maxConcurrentPerMerchant = try container.decodeIfPresent(Int.self, forKey: .maxConcurrentPerMerchant)
            maxShopCallsPerMerchant = try container.decodeIfPresent(Int.self, forKey: .maxShopCallsPerMerchant)
            registeredMerchants = try container.decodeIfPresent(RegisteredMerchants.self, forKey: .registeredMerchants)
        }
    }
}

/// How Orchard calls out; the runtime turns it into its HTTP client's settings.
public struct OutboundSettings: Sendable, Equatable {
    /// The proxy for every outbound call; nil: none (the environment's proxy variables never count).
    public var proxy: String?
    /// Calls in flight per libcurl client, to one host, and to Apple for one merchant's sessions.
    public var maxTransfers = 256
    public var maxConcurrentPerHost = 64
    public var maxConcurrentPerMerchant = 16
    /// Calls in flight to one merchant's shop (webhooks and quotes): one shop's slow endpoint
    /// cannot take the shop client's connections from the others.
    public var maxShopCallsPerMerchant = 8
    /// Where registered merchants' webhooks, quotes and processors may connect: public addresses,
    /// and the private networks `outbound.registeredMerchants.privateNetworks` lists.
    public var tenants = TenantDestinations()
    /// Processor origins besides Worldpay's and Worldline's own that the admin API may give a
    /// registered merchant, each with its trust (`outbound.registeredMerchants.testProcessors`).
    public var tenantTestProcessors: [RemoteEndpoint] = []

    public init() {}
}

extension ServerConfiguration {
    static func resolveLimits(_ file: ConfigurationFile.Limits?) throws(ConfigurationError) -> RateLimitSettings {
        var settings = RateLimitSettings.defaults
        let rules: [(RateLimitSettings.Action, ConfigurationFile.RateRules?)] = [
            (.merchantSessions, file?.merchantSessions), (.orders, file?.orders), (.paymentRequests, file?.paymentRequests),
            (.orderUpdates, file?.orderUpdates), (.authorizations, file?.authorizations), (.tokenEvents, file?.tokenEvents),
            (.walletOrders, file?.walletOrders),
        ]
        for (action, rule) in rules {
            if let rate = rule?.perClientIP {
                settings.perClient[action] = try resolveRate(rate, label: "limits.\(action.rawValue).perClientIP")
            }
            if let rate = rule?.perMerchant {
                settings.perMerchant[action] = try resolveRate(rate, label: "limits.\(action.rawValue).perMerchant")
            }
        }
        if let tracked = file?.maxTrackedClients {
            guard (100...10_000_000).contains(tracked) else { throw ConfigurationError("limits.maxTrackedClients must be 100–10000000") }
            settings.maxTrackedClients = tracked
        }
        return settings
    }

    /// A rate, or nil for `perMinute: 0` (off).
    static func resolveRate(_ rate: ConfigurationFile.Rate, label: String) throws(ConfigurationError) -> RateLimit? {
        guard rate.perMinute != 0 else { return nil }
        let burst = rate.burst ?? max(1, rate.perMinute / 6)
        guard (1...1_000_000).contains(rate.perMinute), (1...1_000_000).contains(burst) else {
            throw ConfigurationError("\(label): perMinute must be 0 (off) to 1000000 and burst 1–1000000")
        }
        return RateLimit(perMinute: rate.perMinute, burst: burst)
    }

    static func resolveOutbound(_ file: ConfigurationFile.Outbound?, values: any ConfigurationReader) throws(ConfigurationError)
        -> OutboundSettings
    {
        var settings = OutboundSettings()
        (settings.tenants, settings.tenantTestProcessors) = try resolveRegisteredMerchants(file?.registeredMerchants, values: values)
        if let proxy = file?.proxy {
            guard let url = URLComponents(string: proxy), let scheme = url.scheme?.lowercased(),
                ["http", "https", "socks5h"].contains(scheme), let host = url.host, !host.isEmpty, url.user == nil, url.password == nil,
                url.path.isEmpty || url.path == "/", url.query == nil
            else {
                throw ConfigurationError(
                    "outbound.proxy must be a URL like http://proxy.internal:3128 (http, https or socks5h; no credentials, path or query); got \(proxy)"
                )
            }
            settings.proxy = proxy
        }
        settings.maxTransfers = file?.maxTransfers ?? settings.maxTransfers
        settings.maxConcurrentPerHost = file?.maxConcurrentPerHost ?? settings.maxConcurrentPerHost
        settings.maxConcurrentPerMerchant = file?.maxConcurrentPerMerchant ?? settings.maxConcurrentPerMerchant
        // Unset, it follows a smaller per-host bound down rather than contradict it.
        settings.maxShopCallsPerMerchant =
            file?.maxShopCallsPerMerchant ?? min(settings.maxShopCallsPerMerchant, settings.maxConcurrentPerHost)
        guard (1...100_000).contains(settings.maxTransfers), (1...settings.maxTransfers).contains(settings.maxConcurrentPerHost),
            (1...settings.maxConcurrentPerHost).contains(settings.maxConcurrentPerMerchant),
            (1...settings.maxConcurrentPerHost).contains(settings.maxShopCallsPerMerchant)
        else {
            throw ConfigurationError(
                "outbound: maxTransfers must be 1–100000, maxConcurrentPerHost 1 to maxTransfers, and maxConcurrentPerMerchant and maxShopCallsPerMerchant 1 to maxConcurrentPerHost"
            )
        }
        return settings
    }
}
