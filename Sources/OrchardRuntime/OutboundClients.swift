import CurlClient
import OrchardConfiguration
import OrchardCore
import OrchardServer
import OrchardServices
import ShopCallbacks

extension CurlHTTPClient.Configuration {
    /// The client settings the `outbound` section asks for: its proxy (none unless configured,
    /// whatever the environment says) and its bounds on calls in flight. The connection cache
    /// holds as many connections as may be in flight: a smaller one closes the surplus after each
    /// call, and under that load every call then pays a new mutual-TLS handshake (merchant
    /// validation fell from 3,946/s at c=128 to 1,356/s at c=256 with the cache fixed at 128).
    public init(outbound: OutboundSettings, allowedSchemes: [String] = ["https"]) {
        self.init(
            allowedSchemes: allowedSchemes, maxCachedConnections: max(128, outbound.maxTransfers), maxTransfers: outbound.maxTransfers,
            maxConcurrentPerHost: outbound.maxConcurrentPerHost, maxConcurrentPerGroup: outbound.maxConcurrentPerMerchant,
            proxy: outbound.proxy)
    }

    /// The shops' client: as ``init(outbound:allowedSchemes:)``, its groups being merchants' shops.
    public init(shopCalls outbound: OutboundSettings) {
        self.init(outbound: outbound, allowedSchemes: ["https", "http"])
        maxConcurrentPerGroup = outbound.maxShopCallsPerMerchant
    }
}

/// The libcurl clients a server calls out through, from the `outbound` section. Destinations the
/// operator chose (Apple, the configured merchants' processors) share one client; registered
/// merchants' processors have their own, whose every connection is checked against
/// ``OutboundSettings/tenants`` and which never reuses a connection the other opened; the shops'
/// webhooks and quote URLs have theirs (split the same way inside ``CurlShopTransport``).
public struct OutboundClients: Sendable {
    public let http: CurlHTTPClient
    public let tenantProcessors: CurlHTTPClient
    public let shopCalls: CurlShopTransport

    /// - Parameter resolve: names every client answers without DNS (CURLOPT_RESOLVE entries,
    ///   `host:port:address`); for tests, which have no DNS. Never read from configuration.
    public init(_ outbound: OutboundSettings, resolve: [String] = []) throws {
        var shared = CurlHTTPClient.Configuration(outbound: outbound)
        shared.resolve = resolve
        http = try CurlHTTPClient(configuration: shared)
        var tenants = shared
        tenants.destinationCheck = outbound.tenants.curlCheck
        tenantProcessors = try CurlHTTPClient(configuration: tenants)
        var shops = CurlHTTPClient.Configuration(shopCalls: outbound)
        shops.resolve = resolve
        shopCalls = try CurlShopTransport(configuration: shops, tenants: outbound.tenants)
    }

    /// Stops the clients' threads (the shops' transport stops with its last reference).
    public func shutdown() {
        http.shutdown()
        tenantProcessors.shutdown()
    }

    /// ``shutdown()``, waiting for both threads' cleanup: `orchard serve` is about to exit
    /// (``CurlHTTPClient/shutdownBeforeExit()``).
    public func shutdownBeforeExit() {
        http.shutdownBeforeExit()
        tenantProcessors.shutdownBeforeExit()
    }
}
