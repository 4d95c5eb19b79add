import Crypto
import CurlClient
import Foundation
import Logging
import OrchardConfiguration
import OrchardCore
import OrchardIntegrationTesting
import OrchardServer
import OrchardServerTesting
import OrchardServices
import OrchardTesting
import Synchronization
import Testing

/// A registered merchant's webhook, quote URL and processor come through the admin API: they
/// reach public addresses only, checked when set and again on the address each connection goes
/// to (DNS rebinding), while a configured merchant keeps its loopback webhook.
@Suite("Registered merchants' destinations: public addresses only (SSRF)")
struct TenantDestinationTests {
    static let partner = "tea-house|eu"
    static let domain = "tea-house.example"
    static let secret = String(repeating: "w", count: 40)
    static var partnerPath: String { partner.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? "" }

    /// A server with the platform, its admin API and a registered partner; `resolve` answers names
    /// without DNS, `outbound` is the configuration file's section.
    static func with(
        outbound: ConfigurationFile.Outbound? = nil, resolve: [String] = [], receiver: MockWebhookReceiver? = nil,
        logs: CapturingLogHandler? = nil, _ body: (ServerHarness) async throws -> Void
    ) async throws {
        try await ServerHarness.with(
            otherMockMerchants: MoreMerchants.mockMerchants,
            environment: MoreMerchants.environment.merging(
                ["SETTINGS_KEY": RegisteredMerchantPaymentTests.settingsKey, "SHOP_WEBHOOK_SECRET": secret]) { $1 },
            logHandler: logs, callsShops: true, resolve: resolve,
            configure: { file, directory in
                try MoreMerchants.all(&file, directory)
                file.platformIntegrator?.settingsKey = "env:SETTINGS_KEY"
                file.webhooks = .init(firstRetrySeconds: 1, maximumRetrySeconds: 2, pollIntervalMilliseconds: 100)
                file.outbound = outbound
                if let receiver { file.merchants[0].webhook = .init(url: receiver.url, secret: "env:SHOP_WEBHOOK_SECRET") }
            }
        ) { server in
            let registered = try await admin(
                server, "POST", "/admin/merchants",
                #"{"partnerInternalMerchantIdentifier": "\#(partner)", "partnerMerchantName": "Tea House", "domainNames": ["\#(domain)"]}"#)
            #expect(registered.status == 201)
            try await body(server)
        }
    }

    static func admin(_ server: ServerHarness, _ method: String, _ path: String, _ body: String? = nil) async throws -> CurlResponse {
        try await server.send(method, path, body: body.map { Array($0.utf8) }, extraHeaders: MoreMerchants.authorization)
    }

    static func putSettings(_ server: ServerHarness, _ json: String) async throws -> CurlResponse {
        try await admin(server, "PUT", "/admin/merchants/\(partnerPath)/settings", json)
    }

    /// Hosts a tenant's webhook or quote URL may not name.
    static let privateURLs = [
        "https://169.254.169.254/latest/meta-data/", "https://10.0.0.1/", "https://[fd00::1]/", "https://0.0.0.0/",
        "https://127.0.0.1:8443/hook", "https://[::ffff:127.0.0.1]/", "https://[::1]/", "https://100.64.0.1/",
        "https://[64:ff9b::a9fe:a9fe]/", "https://localhost/hook", "https://shop.localhost/", "https://metadata.google.internal/",
        "https://2130706433/", "https://0x7f.1/", "https://intranet/", "http://127.0.0.1:8080/hook",
    ]

    @Test(
        "PUT settings: a webhook or quote URL on a link-local, private, unique-local, unspecified, loopback or local-name host is a 400 naming the field, and nothing is stored"
    )
    func adminRefusesPrivateURLs() async throws {
        // One server for every URL: the suite stays light beside the timing-sensitive ones.
        try await Self.with { server in
            for url in Self.privateURLs {
                for field in ["webhook", "quote"] {
                    let refused = try await Self.putSettings(server, #"{"\#(field)": {"url": "\#(url)", "secret": "\#(Self.secret)"}}"#)
                    #expect(refused.status == 400, "\(field) \(url)")
                    #expect(refused.errorMessage?.contains("\(field).url") == true, "\(url): \(refused.errorMessage ?? "")")
                }
            }
            #expect(try await server.store.sealedMerchantSettings().isEmpty, "nothing was stored")
            let publicHost = try await Self.putSettings(
                server, #"{"webhook": {"url": "https://shop.example.com/hook", "secret": "\#(Self.secret)"}}"#)
            #expect(publicHost.status == 200, "a public name is accepted: the connect-time check follows")
        }
    }

    @Test(
        "PUT settings: allowNonProductionHost, an inline CA or a processor origin that is not the processor's own is a 400 naming the field"
    )
    func adminRefusesProcessorTrust() async throws {
        let ca = String(decoding: TestMaterial.shared.caPEM, as: UTF8.self).replacingOccurrences(of: "\n", with: "\\n")
        let credentials = #""entity": "e", "username": "u", "password": "p""#
        try await Self.with { server in
            let cases: [(String, String)] = [
                (#""baseURL": "https://127.0.0.1:9443", "allowNonProductionHost": true"#, "allowNonProductionHost"),
                (#""allowNonProductionHost": true"#, "allowNonProductionHost"),
                (#""caFile": "\#(ca)""#, "caFile"),
                (#""baseURL": "https://evil.example", "caFile": "\#(ca)", "allowNonProductionHost": true"#, "allowNonProductionHost"),
                (#""baseURL": "https://127.0.0.1:9443""#, "baseURL"),
                (#""baseURL": "https://access.worldpay.com:8443""#, "baseURL"),
            ]
            for (fields, named) in cases {
                let refused = try await Self.putSettings(server, #"{"processor": {"type": "worldpay", \#(fields), \#(credentials)}}"#)
                #expect(refused.status == 400, "\(fields)")
                #expect(refused.errorMessage?.contains("processor.\(named)") == true, "\(refused.errorMessage ?? "")")
            }
            let worldline = try await Self.putSettings(
                server,
                #"{"processor": {"type": "worldline", "baseURL": "https://10.0.0.7", "allowNonProductionHost": true, "decryption": "orchard", "merchantId": "m", "apiKeyId": "k", "secretApiKey": "s"}}"#
            )
            #expect(worldline.status == 400, "the DPAN never goes to a host a tenant chose")
            #expect(try await server.store.sealedMerchantSettings().isEmpty)
            let production = try await Self.putSettings(
                server, #"{"processor": {"type": "worldpay", "baseURL": "https://try.access.worldpay.com", \#(credentials)}}"#)
            #expect(production.status == 200, "\(production.errorMessage ?? "")")
            #expect(production.json?["processorBaseURL"] as? String == "https://try.access.worldpay.com")
        }
    }

    @Test(
        "a webhook name that resolves to 127.0.0.1 is refused when connecting: the attempt records why, nothing reaches the listener, and the configured merchant's loopback webhook is delivered"
    )
    func rebindingWebhook() async throws {
        let listener = ConnectionRecorder()
        let port = try await listener.start()
        defer { Task { await listener.stop() } }
        let receiver = MockWebhookReceiver(secret: Self.secret)
        try await receiver.start()
        defer { Task { await receiver.stop() } }
        let logs = CapturingLogHandler()
        try await Self.with(resolve: ["rebind.example:\(port):127.0.0.1"], receiver: receiver, logs: logs) { server in
            let set = try await Self.putSettings(
                server, #"{"webhook": {"url": "https://rebind.example:\#(port)/orchard/webhooks", "secret": "\#(Self.secret)"}}"#)
            #expect(set.status == 200, "the name passes the check made when it is set")
            try await Self.payAsPartner(server)
            let refused = try await Self.waitForEvent(server) { $0.attempts >= 1 }
            #expect(refused?.state == .pending, "retried later, never delivered")
            #expect(
                refused?.lastError?.contains("refused: rebind.example resolved to 127.0.0.1, not a public address (loopback, 127.0.0.0/8)")
                    == true, "\(refused?.lastError ?? "no attempt")")
            #expect(listener.connections == 0, "nothing reached the loopback listener")
            let logged = logs.warnings(containing: "webhook not delivered").compactMap { $0.metadata["error"] }
            #expect(logged.contains { $0.contains("refusedDestination") && $0.contains("refused: rebind.example resolved to 127.0.0.1") })

            // The configured merchant's webhook to http://127.0.0.1 is the operator's choice: delivered.
            _ = try await PaymentsAPITests().payThroughPage(server, key: try await server.apiKey())
            let seen = try await receiver.wait { $0.contains { $0.type == "payment.authorized" } }
            #expect(seen.contains { $0.type == "payment.authorized" && $0.verified })
            #expect(listener.connections == 0)
        }
    }

    @Test(
        "a quote URL that resolves to 127.0.0.1 is refused when connecting: the update fails with quote_failed and nothing reaches the listener"
    )
    func rebindingQuote() async throws {
        let listener = ConnectionRecorder()
        let port = try await listener.start()
        defer { Task { await listener.stop() } }
        let logs = CapturingLogHandler()
        try await Self.with(resolve: ["quote.example:\(port):127.0.0.1"], logs: logs) { server in
            let set = try await Self.putSettings(
                server, #"{"quote": {"url": "https://quote.example:\#(port)/quote", "secret": "\#(Self.secret)"}}"#)
            #expect(set.status == 200)
            let key = try await Self.partnerKey(server)
            let cart =
                #"{"amount": 740, "currency": "EUR", "countryCode": "FR", "reference": "tea-q", "shippingMethods": [{"identifier": "post", "label": "Post", "amount": 500}]}"#
            let created = try await server.api("POST", "/v1/payment-requests", key: key, json: cart, idempotencyKey: "q")
            #expect(created.status == 201, "\(created.errorMessage ?? "")")
            let id = try #require(created.json?["id"] as? String)
            let update = try await server.send(
                "POST", "/api/orders/\(id)/shipping-contact", host: Self.domain, body: Array(#"{"countryCode": "FR"}"#.utf8))
            #expect(update.status == 502)
            #expect(update.errorCode == "quote_failed")
            #expect(update.errorMessage?.contains("127.0.0.1") == false, "the shopper is not told the shop's addresses")
            let logged = logs.records.withLock { $0.filter { $0.message.contains("quote URL failed") } }.compactMap { $0.metadata["error"] }
            #expect(logged.contains { $0.contains("refused: quote.example resolved to 127.0.0.1, not a public address") }, "\(logged)")
            #expect(listener.connections == 0)
        }
    }

    @Test(
        "a test processor the file lists, whose name resolves to a loopback address the file does not allow, is refused when connecting: nothing reaches it and the payment stays unknown"
    )
    func rebindingProcessor() async throws {
        let listener = ConnectionRecorder()
        let port = try await listener.start()
        defer { Task { await listener.stop() } }
        let origin = "https://worldpay.test:\(port)"
        let outbound = ConfigurationFile.Outbound(registeredMerchants: .init(testProcessors: [.init(baseURL: origin, caFile: "ca.pem")]))
        try await Self.with(outbound: outbound, resolve: ["worldpay.test:\(port):127.0.0.1"]) { server in
            let inlineCA = try await Self.putSettings(
                server,
                #"{"processor": {"type": "worldpay", "baseURL": "\#(origin)", "caFile": "x", "entity": "e", "username": "u", "password": "p"}}"#
            )
            #expect(inlineCA.status == 400, "a listed test origin takes the file's CA, never one given here")
            let set = try await Self.putSettings(
                server, #"{"processor": {"type": "worldpay", "baseURL": "\#(origin)", "entity": "e", "username": "u", "password": "p"}}"#)
            #expect(set.status == 200, "\(set.errorMessage ?? "")")
            let paid = try await Self.payAsPartner(server, expecting: 504)
            #expect(paid.errorCode == "payment_unknown")
            #expect(listener.connections == 0, "the processor call never left")
        }
    }

    /// The partner's API key.
    static func partnerKey(_ server: ServerHarness) async throws -> String {
        let key = try await admin(server, "POST", "/admin/merchants/\(partnerPath)/api-keys")
        return try #require(key.json?["secret"] as? String)
    }

    /// Creates a payment request for the partner and pays it on its domain (its processor, record
    /// only by default, queues `payment.authorized`).
    @discardableResult
    static func payAsPartner(_ server: ServerHarness, expecting status: Int = 200) async throws -> CurlResponse {
        let paid = try await RegisteredMerchantPaymentTests.pay(
            server, key: try await partnerKey(server), domain: domain, reference: "tea-1")
        #expect(paid.status == status, "\(paid.errorMessage ?? "")")
        return paid
    }

    /// The partner's first webhook event once `condition` holds for it, polled until a deadline.
    static func waitForEvent(_ server: ServerHarness, until condition: (WebhookEvent) -> Bool) async throws -> WebhookEvent? {
        let held = try await Eventually.value {
            try await server.store.webhookEvents(merchantIdentifier: partner, state: nil, limit: 10).first.flatMap {
                condition($0) ? $0 : nil
            }
        }
        if let held { return held }
        return try await server.store.webhookEvents(merchantIdentifier: partner, state: nil, limit: 10).first
    }
}
