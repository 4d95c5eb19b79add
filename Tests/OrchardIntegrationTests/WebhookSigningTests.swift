import CurlClient
import Foundation
import OrchardConfiguration
import OrchardCore
import OrchardIntegrationTesting
import OrchardServer
import OrchardServerTesting
import OrchardServices
import OrchardTesting
import Testing

/// Webhooks signed to the Standard Webhooks specification beside `Orchard-Signature`, over real
/// HTTP: `whsec_` secrets, a rotation's two secrets, and `POST /admin/webhooks/test`.
@Suite("Webhook signing: Standard Webhooks, whsec_ secrets, rotation, test deliveries")
struct WebhookSigningTests {
    static let current = "whsec_" + Data((0..<32).map { UInt8($0 * 7 % 256) }).base64EncodedString()
    static let previous = String(repeating: "0123456789abcdef", count: 3)

    static func with(receiver: MockWebhookReceiver, previous: Bool = true, _ body: (ServerHarness) async throws -> Void) async throws {
        try await ServerHarness.with(
            otherMockMerchants: MoreMerchants.mockMerchants,
            environment: MoreMerchants.environment.merging(["NEW_SECRET": current, "OLD_SECRET": Self.previous]) { $1 },
            callsShops: true,
            configure: { file, directory in
                try MoreMerchants.addSecondMerchant(&file, directory)
                MoreMerchants.addAdmin(&file)
                file.merchants[0].webhook = .init(
                    url: receiver.url, secret: "env:NEW_SECRET", previousSecret: previous ? "env:OLD_SECRET" : nil)
            }, body)
    }

    func sendTest(_ server: ServerHarness, _ body: String) async throws -> CurlResponse {
        try await server.send(
            "POST", "/admin/webhooks/test", body: Array(body.utf8), extraHeaders: MoreMerchants.authorization)
    }

    @Test("during a rotation a test delivery verifies with either secret; Orchard-Signature with the current one only")
    func rotation() async throws {
        let receiver = MockWebhookReceiver(secret: Self.current)
        receiver.answer(202, body: "ok\u{1B}[2J")
        try await receiver.start()
        defer { Task { await receiver.stop() } }
        try await Self.with(receiver: receiver) { server in
            let merchant = TestMaterial.merchantIdentifier
            let answer = try await sendTest(server, #"{"merchantIdentifier": "\#(merchant)", "type": "payment.authorized"}"#)
            #expect(answer.status == 200)
            #expect(answer.json?["status"] as? Int == 202 && answer.json?["delivered"] as? Bool == true)
            #expect(answer.json?["body"] as? String == "ok\u{1B}[2J")
            let delivery = try #require(try await receiver.wait { !$0.isEmpty }.first)
            #expect(delivery.eventId == answer.json?["eventId"] as? String)
            #expect(delivery.standard["webhook-id"] == delivery.eventId)
            #expect(delivery.standard["webhook-signature"]?.split(separator: " ").count == 2)
            #expect(delivery.standardVerified(with: Secret(Self.current)))
            #expect(delivery.standardVerified(with: Secret(Self.previous)))
            #expect(!delivery.standardVerified(with: Secret(String(repeating: "x", count: 40))))
            #expect(delivery.verified, "Orchard-Signature with the current secret")
            #expect(
                !WebhookSignature.verify(header: delivery.signature, body: delivery.body, secret: Secret(Self.previous), now: Date()))
            let event = try #require(delivery.json)
            #expect(event["type"] as? String == "payment.authorized" && event["test"] as? Bool == true)
            #expect((event["data"] as? [String: Any])?["payment"] != nil)
            // Not kept in the outbox.
            #expect(try await server.store.webhookEvents(merchantIdentifier: nil, state: nil, limit: 10).isEmpty)
        }
    }

    @Test("a test of an unknown type, for an unknown merchant or one without an endpoint is refused saying why")
    func refusals() async throws {
        let receiver = MockWebhookReceiver(secret: Self.current)
        try await receiver.start()
        defer { Task { await receiver.stop() } }
        try await Self.with(receiver: receiver, previous: false) { server in
            let merchant = TestMaterial.merchantIdentifier
            let unknownType = try await sendTest(server, #"{"merchantIdentifier": "\#(merchant)", "type": "payment.teleported"}"#)
            #expect(unknownType.status == 400)
            #expect(unknownType.errorMessage?.contains("payment.authorized") == true)
            let unknownMerchant = try await sendTest(server, #"{"merchantIdentifier": "merchant.nobody", "type": "payment.authorized"}"#)
            #expect(unknownMerchant.status == 404)
            let noEndpoint = try await sendTest(
                server, #"{"merchantIdentifier": "\#(TestMaterial.secondMerchantIdentifier)", "type": "payment.authorized"}"#)
            #expect(noEndpoint.status == 409 && noEndpoint.errorMessage?.contains("has no webhook endpoint") == true)
            let unauthorized = try await server.send(
                "POST", "/admin/webhooks/test", body: Array(#"{"merchantIdentifier": "x", "type": "payment.authorized"}"#.utf8))
            #expect(unauthorized.status == 401)
            #expect(receiver.deliveries.isEmpty)
            // Every type has a sample, and each is delivered verified.
            for type in WebhookEventType.allCases {
                let answer = try await sendTest(server, #"{"merchantIdentifier": "\#(merchant)", "type": "\#(type.rawValue)"}"#)
                #expect(answer.json?["delivered"] as? Bool == true, "\(type.rawValue)")
            }
            let seen = try await receiver.wait { $0.count >= WebhookEventType.allCases.count }
            #expect(seen.map(\.type) == WebhookEventType.allCases.map(\.rawValue))
            #expect(seen.allSatisfy { $0.standardVerified(with: Secret(Self.current)) && $0.verified })
        }
    }

    @Test(
        "a registered merchant's settings take a whsec_ secret and a previousSecret through the admin API; its test delivery carries both")
    func registeredMerchant() async throws {
        let receiver = MockWebhookReceiver(secret: Self.current)
        try await receiver.start()
        defer { Task { await receiver.stop() } }
        try await ServerHarness.with(
            otherMockMerchants: MoreMerchants.mockMerchants,
            environment: MoreMerchants.environment.merging(["SETTINGS_KEY": TenantIsolationTests.settingsKey]) { $1 }, callsShops: true,
            configure: { file, directory in
                try MoreMerchants.all(&file, directory)
                file.platformIntegrator?.settingsKey = "env:SETTINGS_KEY"
                // The tenant's receiver is on loopback, which only the file may allow.
                file.outbound = .init(registeredMerchants: .init(privateNetworks: ["127.0.0.0/8"]))
            }
        ) { server in
            let partner = TenantIsolationTests.partner
            func admin(_ method: String, _ path: String, _ body: String) async throws -> CurlResponse {
                try await server.send(method, path, body: Array(body.utf8), extraHeaders: MoreMerchants.authorization)
            }
            let registered = try await admin(
                "POST", "/admin/merchants",
                #"{"partnerInternalMerchantIdentifier": "\#(partner)", "partnerMerchantName": "Tenant", "domainNames": ["\#(TenantIsolationTests.domain)"]}"#
            )
            #expect(registered.status == 201)
            let settings = "/admin/merchants/\(partner)/settings"
            let bad = try await admin(
                "PUT", settings, #"{"webhook": {"url": "\#(receiver.url)", "secret": "\#(Self.current)", "previousSecret": "whsec_short"}}"#
            )
            #expect(bad.status == 400 && bad.errorMessage?.contains("webhook.previousSecret") == true, "\(bad.errorMessage ?? "")")
            let good = try await admin(
                "PUT", settings,
                #"{"webhook": {"url": "\#(receiver.url)", "secret": "\#(Self.current)", "previousSecret": "\#(Self.previous)"}}"#)
            #expect(good.status == 200, "\(good.errorMessage ?? "")")
            #expect(!String(decoding: good.body, as: UTF8.self).contains("whsec_"), "no secret is shown")
            let sent = try await admin("POST", "/admin/webhooks/test", #"{"merchantIdentifier": "\#(partner)", "type": "mandate.created"}"#)
            #expect(sent.json?["delivered"] as? Bool == true, "\(sent.errorMessage ?? "")")
            let delivery = try #require(try await receiver.wait { !$0.isEmpty }.first)
            #expect(delivery.standardVerified(with: Secret(Self.current)) && delivery.standardVerified(with: Secret(Self.previous)))
            #expect(delivery.verified && delivery.type == "mandate.created")
        }
    }

    @Test("a whsec_ secret that is not base64 or too short, or a previousSecret equal to the secret, is refused at startup")
    func configuration() throws {
        func problem(secret: String, previous: String? = nil) -> String? {
            do {
                let directory = try TemporaryDirectory()
                defer { directory.remove() }
                var file = try ServerHarness.configurationFile(gatewayPort: 9, directory: directory)
                file.merchants[0].webhook = .init(
                    url: "http://127.0.0.1:9/hook", secret: "env:S", previousSecret: previous.map { _ in "env:P" })
                _ = try ServerConfiguration.resolve(
                    file, relativeTo: directory.url.path, environment: ["S": secret, "P": previous ?? ""])
                return nil
            } catch {
                return (error as? ConfigurationError)?.message ?? "\(error)"
            }
        }
        #expect(problem(secret: Self.current) == nil)
        #expect(problem(secret: Self.current, previous: Self.previous) == nil)
        #expect(problem(secret: "whsec_not*base64*at*all*not*base64*at*all")?.contains("base64 of at least 24 bytes") == true)
        #expect(problem(secret: "whsec_" + Data(repeating: 1, count: 16).base64EncodedString())?.contains("24 bytes") == true)
        #expect(problem(secret: "short")?.contains("at least 32 characters") == true)
        #expect(problem(secret: Self.current, previous: Self.current)?.contains("previousSecret is the same key") == true)
        #expect(problem(secret: Self.current, previous: "short")?.contains("previousSecret must be at least 32") == true)
    }
}
