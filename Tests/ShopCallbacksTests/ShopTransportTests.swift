import CurlClient
import Foundation
import OrchardCore
import OrchardTesting
import ShopCallbacks
import Testing

/// Calls to the shop on libcurl clients of their own: an operator's endpoint and a tenant's never
/// share a connection, and a tenant's is checked where it connects.
@Suite("Shop calls: the operator's and the tenants' clients")
struct ShopTransportTests {
    @Test("a tenant's call never rides on a connection the operator's calls to the same origin opened")
    func separateConnections() async throws {
        let receiver = MockWebhookReceiver(secret: String(repeating: "s", count: 40))
        try await receiver.start()
        defer { Task { await receiver.stop() } }
        let transport = try CurlShopTransport()
        let configured = WebhookEndpoint(url: receiver.url, secret: Secret(String(repeating: "s", count: 40)))
        let first = try await transport.post(to: configured, headers: [], body: Array("{}".utf8), timeout: .seconds(5), merchant: "m")
        #expect(first.status == 200, "the operator's loopback endpoint is called")
        var tenant = configured
        tenant.chosenBy = .tenant
        let refused = await #expect(throws: CurlError.self) {
            _ = try await transport.post(to: tenant, headers: [], body: Array("{}".utf8), timeout: .seconds(5), merchant: "m")
        }
        #expect(refused?.kind == .refusedDestination)
        #expect(refused?.message == "refused: 127.0.0.1 resolved to 127.0.0.1, not a public address (loopback, 127.0.0.0/8)")
        #expect(receiver.deliveries.count == 1, "the open keep-alive connection was not lent to the tenant's call")
    }
}
