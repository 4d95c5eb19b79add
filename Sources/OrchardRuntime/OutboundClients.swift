import CurlClient
import OrchardServer

extension CurlHTTPClient.Configuration {
    /// The client settings the `outbound` section asks for: its proxy (none unless configured,
    /// whatever the environment says) and its bounds on calls in flight.
    public init(outbound: OutboundSettings, allowedSchemes: [String] = ["https"]) {
        self.init(
            allowedSchemes: allowedSchemes, maxTransfers: outbound.maxTransfers, maxConcurrentPerHost: outbound.maxConcurrentPerHost,
            maxConcurrentPerGroup: outbound.maxConcurrentPerMerchant, proxy: outbound.proxy)
    }

    /// The shops' client: as ``init(outbound:allowedSchemes:)``, its groups being merchants' shops.
    public init(shopCalls outbound: OutboundSettings) {
        self.init(outbound: outbound, allowedSchemes: ["https", "http"])
        maxConcurrentPerGroup = outbound.maxShopCallsPerMerchant
    }
}
