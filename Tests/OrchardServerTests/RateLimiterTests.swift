import ApplePay
import Foundation
import OrchardConfiguration
import OrchardCore
import OrchardServer
import OrchardServices
import OrchardTesting
import Synchronization
import Testing

@Suite("Rate limits: token buckets on an injected clock, client addresses behind trusted proxies")
struct RateLimiterTests {
    static func limiter(
        client: RateLimit? = RateLimit(perMinute: 60, burst: 2), merchant: RateLimit? = nil, maxTrackedClients: Int = 100,
        clock: ManualClock
    ) -> RateLimiter {
        RateLimiter(
            settings: RateLimitSettings(
                perClient: client.map { [.orders: $0] } ?? [:], perMerchant: merchant.map { [.orders: $0] } ?? [:],
                maxTrackedClients: maxTrackedClients),
            time: clock.source)
    }

    @Test("a bucket gives its burst, then one token per 1/rate, and says when the next comes")
    func bucket() {
        let clock = ManualClock()
        let limiter = Self.limiter(clock: clock)
        #expect(limiter.admit(.orders, client: "a", merchant: nil) == nil)
        #expect(limiter.admit(.orders, client: "a", merchant: nil) == nil)
        #expect(limiter.admit(.orders, client: "a", merchant: nil) == RateLimiter.Refusal(scope: .client, retryAfter: 1))
        #expect(limiter.admit(.orders, client: "b", merchant: nil) == nil, "another client has its own bucket")
        #expect(limiter.admit(.merchantSessions, client: "a", merchant: nil) == nil, "another action is not limited here")
        clock.advance(0.5)
        #expect(limiter.admit(.orders, client: "a", merchant: nil) != nil, "half a token is not one")
        clock.advance(0.5)
        #expect(limiter.admit(.orders, client: "a", merchant: nil) == nil, "one second later, one token")
        #expect(limiter.admit(.orders, client: "a", merchant: nil) != nil)
        clock.advance(3600)
        #expect(limiter.admit(.orders, client: "a", merchant: nil) == nil)
        #expect(limiter.admit(.orders, client: "a", merchant: nil) == nil)
        #expect(limiter.admit(.orders, client: "a", merchant: nil) != nil, "an hour saves up the burst, no more")
    }

    @Test("Retry-After is the wait for a whole token at a slow rate")
    func slowRate() {
        let clock = ManualClock()
        let limiter = Self.limiter(client: RateLimit(perMinute: 2, burst: 1), clock: clock)
        #expect(limiter.admit(.orders, client: "a", merchant: nil) == nil)
        #expect(limiter.admit(.orders, client: "a", merchant: nil)?.retryAfter == 30)
        clock.advance(15)
        #expect(limiter.admit(.orders, client: "a", merchant: nil)?.retryAfter == 15)
    }

    @Test("client and merchant buckets are taken together or not at all")
    func both() {
        let clock = ManualClock()
        let limiter = Self.limiter(client: RateLimit(perMinute: 1, burst: 1), merchant: RateLimit(perMinute: 1, burst: 2), clock: clock)
        #expect(limiter.admit(.orders, client: "a", merchant: "m") == nil)
        #expect(limiter.admit(.orders, client: "a", merchant: "m")?.scope == .client)
        #expect(limiter.admit(.orders, client: "b", merchant: "m") == nil, "a's refusal took nothing from the merchant")
        #expect(limiter.admit(.orders, client: "c", merchant: "m")?.scope == .merchant)
        #expect(limiter.admit(.orders, client: "c", merchant: "other") == nil, "c's refusal took nothing from c")
    }

    @Test("memory stays bounded: refilled buckets are swept, and past the cap the least recently used clients go")
    func bounded() {
        let clock = ManualClock()
        let limiter = Self.limiter(client: RateLimit(perMinute: 60, burst: 1), maxTrackedClients: 100, clock: clock)
        for index in 0..<100 {
            clock.advance(0.001)  // c0 is the least recently used, c99 the most
            #expect(limiter.admit(.orders, client: "c\(index)", merchant: nil) == nil)
        }
        #expect(limiter.trackedBuckets == 100)
        clock.advance(0.1)
        #expect(limiter.admit(.orders, client: "c0", merchant: nil) != nil, "c0 is the oldest but still empty")
        #expect(limiter.admit(.orders, client: "new", merchant: nil) == nil)
        #expect(limiter.trackedBuckets == 91, "a tenth went to make room for one more")
        #expect(limiter.admit(.orders, client: "c99", merchant: nil) != nil, "recent clients are kept")
        clock.advance(61)
        #expect(limiter.admit(.orders, client: "late", merchant: nil) == nil)
        #expect(limiter.trackedBuckets == 1, "a minute later every refilled bucket is swept")
    }

    @Test("addresses and blocks: IPv4, IPv6, mapped forms, prefixes")
    func networks() throws {
        let block = try #require(IPNetwork("10.0.0.0/8"))
        #expect(block.contains(try #require(IPAddress("10.200.3.4"))))
        #expect(!block.contains(try #require(IPAddress("11.0.0.1"))))
        #expect(!block.contains(try #require(IPAddress("::a00:1"))), "an IPv6 address is not in an IPv4 block")
        let one = try #require(IPNetwork("192.0.2.7"))
        #expect(one.contains(try #require(IPAddress("192.0.2.7"))))
        #expect(!one.contains(try #require(IPAddress("192.0.2.8"))))
        let v6 = try #require(IPNetwork("2001:db8::/32"))
        #expect(v6.contains(try #require(IPAddress("2001:db8:ffff::1"))))
        #expect(!v6.contains(try #require(IPAddress("2001:db9::1"))))
        #expect(IPNetwork("fd00::/7")?.contains(try #require(IPAddress("fdff::1"))) == true)
        for bad in ["10.0.0.0/33", "10.0.0/8", "example.com", "10.0.0.1/", "::/129", "10.0.0.0/-1", "", "1.2.3.4/8/8"] {
            #expect(IPNetwork(bad) == nil, "\(bad)")
        }
        #expect(IPAddress("[::1]")?.description == "0:0:0:0:0:0:0:1")
        #expect(IPAddress("203.0.113.9")?.rateLimitKey == "203.0.113.9")
        #expect(IPAddress("2001:db8:1:2:3:4:5:6")?.rateLimitKey == "2001:db8:1:2::/64", "one IPv6 subscriber's /64 is one client")
    }

    @Test("X-Forwarded-For is believed only from a trusted proxy, read from the right past trusted hops")
    func forwarded() throws {
        let proxies = [try #require(IPNetwork("10.0.0.0/8"))]
        let proxy = IPAddress("10.0.0.5")
        let resolve = { (peer: IPAddress?, values: [String]) in
            ClientAddress.resolve(peer: peer, headerValues: values, trustedProxies: proxies)?.description
        }
        #expect(resolve(IPAddress("198.51.100.1"), ["203.0.113.9"]) == "198.51.100.1", "a direct client cannot name another")
        #expect(resolve(proxy, []) == "10.0.0.5")
        #expect(resolve(proxy, ["203.0.113.9"]) == "203.0.113.9")
        #expect(resolve(proxy, ["1.1.1.1, 203.0.113.9"]) == "203.0.113.9", "what the client wrote to the left is ignored")
        #expect(resolve(proxy, ["1.1.1.1", "203.0.113.9, 10.1.1.1"]) == "203.0.113.9", "a second trusted hop is skipped")
        #expect(resolve(proxy, ["garbage, 203.0.113.9"]) == "203.0.113.9")
        #expect(resolve(proxy, ["203.0.113.9, garbage"]) == "10.0.0.5", "an unreadable hop stops at the last proxy")
        #expect(resolve(proxy, ["10.2.2.2"]) == "10.2.2.2", "all trusted: the left-most")
        #expect(resolve(nil, ["203.0.113.9"]) == nil)
    }
}
