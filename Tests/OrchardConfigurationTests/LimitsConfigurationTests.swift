import Foundation
import OrchardConfiguration
import OrchardConfigurationTesting
import OrchardCore
import OrchardServices
import OrchardTesting
import Testing

@Suite("Configuration: limits, outbound, orders, retention, idle timeout and trusted proxies")
struct LimitsConfigurationTests {
    /// The harness's configuration with `change` applied, resolved.
    static func resolve(_ change: (inout ConfigurationFile) -> Void = { _ in }) throws -> ServerConfiguration {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        var file = try TestConfiguration.file(gatewayPort: 1, directory: directory)
        change(&file)
        return try ServerConfiguration.resolve(file, relativeTo: directory.url.path)
    }

    static func refusal(_ change: (inout ConfigurationFile) -> Void) -> String? {
        do {
            _ = try resolve(change)
            return nil
        } catch let error as ConfigurationError {
            return error.message
        } catch {
            return "\(error)"
        }
    }

    @Test("safe defaults when the sections are absent")
    func defaults() throws {
        let configuration = try Self.resolve()
        #expect(configuration.limits.perClient == RateLimitSettings.defaults.perClient)
        #expect(configuration.limits.perClient[.merchantSessions] == RateLimit(perMinute: 30, burst: 10))
        #expect(configuration.limits.maxTrackedClients == 100_000)
        #expect(configuration.outbound == OutboundSettings())
        #expect(configuration.outbound.proxy == nil && configuration.outbound.maxConcurrentPerMerchant == 16)
        #expect(configuration.ordersOpenFor == .seconds(3600))
        #expect(configuration.idleTimeout == .seconds(60))
        #expect(configuration.trustedProxies.map(\.description) == ["127.0.0.0/8", "0:0:0:0:0:0:0:1/128"])
        #expect(configuration.clientAddressHeader == "X-Forwarded-For")
        #expect(configuration.retention.expiredOrders == .seconds(30 * 86_400))
        #expect(configuration.retention.failedWebhooks == .seconds(90 * 86_400))
    }

    @Test("settings are read: a rate, perMinute 0 turning one off, a proxy, CIDR blocks, retention 0 keeping rows")
    func read() throws {
        let configuration = try Self.resolve { file in
            file.limits = .init(
                merchantSessions: .init(perClientIP: .init(perMinute: 12), perMerchant: .init(perMinute: 0)), maxTrackedClients: 500)
            file.outbound = .init(
                proxy: "http://proxy.internal:3128", maxTransfers: 10, maxConcurrentPerHost: 5, maxConcurrentPerMerchant: 2)
            file.server?.trustedProxies = ["10.0.0.0/8", "::1"]
            file.server?.clientAddressHeader = "X-Real-IP"
            file.server?.idleTimeoutSeconds = 5
            file.orders = .init(openForSeconds: 600)
            file.retention = .init(expiredOrdersDays: 0, deliveredWebhooksDays: 7)
        }
        #expect(configuration.limits.perClient[.merchantSessions] == RateLimit(perMinute: 12, burst: 2))
        #expect(configuration.limits.perMerchant[.merchantSessions] == nil)
        #expect(configuration.limits.perMerchant[.orders] == RateLimitSettings.defaults.perMerchant[.orders])
        #expect(configuration.limits.maxTrackedClients == 500)
        #expect(configuration.outbound.proxy == "http://proxy.internal:3128" && configuration.outbound.maxConcurrentPerMerchant == 2)
        #expect(configuration.trustedProxies.map(\.description) == ["10.0.0.0/8", "0:0:0:0:0:0:0:1/128"])
        #expect(configuration.clientAddressHeader == "X-Real-IP" && configuration.idleTimeout == .seconds(5))
        #expect(configuration.ordersOpenFor == .seconds(600))
        #expect(configuration.retention.expiredOrders == nil && configuration.retention.deliveredWebhooks == .seconds(7 * 86_400))
        let now = Date()
        #expect(configuration.retention.cutoffs(at: now).expiredOrders == nil)
        #expect(configuration.retention.cutoffs(at: now).deliveredWebhooks == now.addingTimeInterval(-7 * 86_400))
    }

    @Test("bad values are refused with the setting named")
    func refused() {
        let cases: [(String, (inout ConfigurationFile) -> Void)] = [
            ("limits.orders.perClientIP", { $0.limits = .init(orders: .init(perClientIP: .init(perMinute: -1))) }),
            (
                "limits.paymentRequests.perMerchant",
                { $0.limits = .init(paymentRequests: .init(perMerchant: .init(perMinute: 5, burst: 0))) }
            ),
            ("limits.maxTrackedClients", { $0.limits = .init(maxTrackedClients: 1) }),
            ("outbound.proxy", { $0.outbound = .init(proxy: "http://user:secret@proxy:3128") }),
            ("outbound.proxy", { $0.outbound = .init(proxy: "ftp://proxy:21") }),
            ("outbound:", { $0.outbound = .init(maxConcurrentPerHost: 500) }),
            ("server.trustedProxies", { $0.server?.trustedProxies = ["nginx.internal"] }),
            ("server.clientAddressHeader", { $0.server?.clientAddressHeader = "Forwarded" }),
            ("server.idleTimeoutSeconds", { $0.server?.idleTimeoutSeconds = 0 }),
            ("orders.openForSeconds", { $0.orders = .init(openForSeconds: 10) }),
            ("retention.failedWebhooksDays", { $0.retention = .init(failedWebhooksDays: -1) }),
        ]
        for (setting, change) in cases {
            let message = Self.refusal(change)
            #expect(message?.contains(setting) == true, "\(setting): \(message ?? "accepted")")
        }
    }

    @Test("an unknown or misspelt key in these sections is refused when the file is read")
    func unknownKeys() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let file = try TestConfiguration.file(gatewayPort: 1, directory: directory)
        var json = try #require(try JSONSerialization.jsonObject(with: try JSONEncoder().encode(file)) as? [String: Any])
        let cases: [(String, Any, String)] = [
            ("limits", ["merchantSession": ["perClientIP": ["perMinute": 1]]], "limits.merchantSession: not a setting"),
            ("limits", ["orders": ["perClient": ["perMinute": 1]]], "limits.orders.perClient: not a setting"),
            ("limits", ["orders": ["perClientIP": ["perMinutes": 1]]], "limits.orders.perClientIP.perMinutes: not a setting"),
            ("outbound", ["proxyURL": "http://p:1"], "outbound.proxyURL: not a setting"),
            ("retention", ["expiredOrderDays": 1], "retention.expiredOrderDays: not a setting"),
            ("orders", ["openFor": 1], "orders.openFor: not a setting"),
        ]
        for (section, value, expected) in cases {
            json[section] = value
            let path = directory.path("orchard.json")
            try JSONSerialization.data(withJSONObject: json).write(to: URL(fileURLWithPath: path))
            #expect {
                _ = try ConfigurationFile.load(path: path)
            } throws: { error in
                (error as? ConfigurationError)?.message.contains(expected) == true
            }
            json[section] = nil
        }
    }
}
