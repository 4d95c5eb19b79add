import CurlClient
import Foundation
import Logging
import OrchardConfiguration
import OrchardCore
import OrchardIntegrationTesting
import OrchardServerTesting
import OrchardServices
import OrchardTesting
import Testing

/// `orchard serve` as a process: what it writes to its log.
@Suite("orchard serve: JSON log lines, as a process")
struct ServeLogTests {
    @Test("a real `orchard serve` writes JSON lines from the configuration's log.format, with no secret in them")
    func serveWritesJSON() async throws {
        let fixture = try await GatewayFixture.start(domains: [ServerHarness.domain])
        let webhookSecret = "whsec-" + String(repeating: "fedcba9876543210", count: 3)
        let server = try ServerProcess(
            processorURL: nil, environment: ["SHOP_WEBHOOK_SECRET": webhookSecret], arguments: ["--log-level", "debug"],
            gatewayPort: fixture.port
        ) { file in
            file.log = .init(format: "json")
            file.merchants[0].webhook = .init(url: "http://127.0.0.1:9/hooks", secret: "env:SHOP_WEBHOOK_SECRET")
        }
        try await server.start()
        #expect(try await server.send("POST", "/api/apple-pay/session", body: MetricsTests.sessionBody).status == 200)
        let key = try await server.send("POST", "/admin/merchants/\(TestMaterial.merchantIdentifier)/api-keys", admin: true)
        let apiSecret = try #require(key.json?["secret"] as? String)
        let (orderId, request) = try await server.order()
        #expect(try await server.pay(orderId, request).status == 200)
        let call = CurlRequest(
            url: "http://127.0.0.1:\(server.port)/v1/payments/pay_missing", headers: [(name: "Authorization", value: "Bearer \(apiSecret)")]
        )
        #expect(try await server.client.execute(call).status == 404)
        await server.stop()

        let output = server.output
        let lines = output.split(separator: "\n")
        let objects = jsonLogLines(output)
        #expect(!lines.isEmpty && objects.count == lines.count, "every line is a JSON object: \(lines.prefix(3))")
        for object in objects {
            #expect(Set(object.keys) == ["time", "level", "label", "message", "metadata"], "\(object)")
            #expect(Logger.Level(rawValue: object["level"] as? String ?? "") != nil)
            #expect((object["time"] as? String)?.hasSuffix("Z") == true)
        }
        let session = objects.first { $0["message"] as? String == "merchant session obtained" }
        #expect((session?["metadata"] as? [String: Any])?["merchant"] as? String == TestMaterial.merchantIdentifier)
        #expect(objects.contains { $0["level"] as? String == "debug" }, "--log-level debug applies")
        for secret in [MoreMerchants.adminToken, apiSecret, webhookSecret] {
            #expect(!output.contains(secret), "a secret reached the log")
        }
        let identityKey = String(decoding: try Data(contentsOf: server.directory.url.appendingPathComponent("identity.key")), as: UTF8.self)
        let keyLine = try #require(identityKey.split(separator: "\n").dropFirst().first)
        #expect(!output.contains(keyLine), "the identity key reached the log")
        await fixture.gateway.stop()
    }
}
