import CurlClient
import OrchardConfiguration
import OrchardServer
import Testing

@testable import OrchardRuntime

/// The libcurl client settings the `outbound` section becomes.
@Suite("Outbound client settings")
struct OutboundClientSettingsTests {
    /// A connection cache smaller than the calls in flight closes the surplus after each call, so
    /// under that load each call pays a new mutual-TLS handshake with Apple (Benchmarks/bench at
    /// c=256: 1,356/s with the cache fixed at 128, 3,167/s with it sized to maxTransfers).
    @Test("the connection cache holds as many connections as may be in flight, and never fewer than 128")
    func cacheFollowsTransfers() {
        var outbound = OutboundSettings()
        outbound.maxTransfers = 512
        outbound.maxConcurrentPerHost = 512
        let raised = CurlHTTPClient.Configuration(outbound: outbound)
        #expect(raised.maxCachedConnections == 512)
        #expect(raised.maxTransfers == 512)
        #expect(raised.maxConcurrentPerHost == 512)

        outbound.maxTransfers = 16
        outbound.maxConcurrentPerHost = 16
        outbound.maxConcurrentPerMerchant = 8
        let small = CurlHTTPClient.Configuration(outbound: outbound)
        #expect(small.maxCachedConnections == 128)
        #expect(small.maxConcurrentPerGroup == 8)
        #expect(CurlHTTPClient.Configuration(shopCalls: outbound).maxCachedConnections == 128)
    }
}
