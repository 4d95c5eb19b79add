import ApplePay
import Crypto
import CurlClient
import Foundation
import OrchardConfiguration
import OrchardCore
import OrchardIntegrationTesting
import OrchardServer
import OrchardServerTesting
import OrchardServices
import OrchardTesting
import ProcessorClients
import Testing

/// A merchant a platform integrator registered takes payments: the admin API sets its processor
/// and webhook (sealed at rest) and its API key, and its payment goes through its own processor.
@Suite("Registered merchants pay through their own processor")
struct RegisteredMerchantPaymentTests {
    static let partner = "tea-house|eu"
    static let domain = "tea-house.example"
    static let settingsKey = String(repeating: "3c", count: 32)
    static let webhookSecret = String(repeating: "w", count: 40)

    func admin(_ server: ServerHarness, _ method: String, _ path: String, _ body: String? = nil) async throws -> CurlResponse {
        try await server.send(method, path, body: body.map { Array($0.utf8) }, extraHeaders: MoreMerchants.authorization)
    }

    /// The configuration file's leave for registered merchants' calls to reach the loopback mocks.
    static func loopbackForRegisteredMerchants(_ mock: MockProcessors) -> ConfigurationFile.Outbound {
        .init(
            registeredMerchants: .init(
                privateNetworks: ["127.0.0.0/8"], testProcessors: [.init(baseURL: mock.baseURL, caFile: "ca.pem")]))
    }

    /// Creates a 7.40 EUR payment request with a registered merchant's `key` and pays it on its
    /// `domain` with a token encrypted to the platform's processing key, as the page would.
    static func pay(_ server: ServerHarness, key: String, domain: String, reference: String) async throws -> CurlResponse {
        let created = try await server.api(
            "POST", "/v1/payment-requests", key: key,
            json: #"{"amount": 740, "currency": "EUR", "countryCode": "FR", "reference": "\#(reference)"}"#, idempotencyKey: reference)
        #expect(created.status == 201)
        let id = try #require(created.json?["id"] as? String)
        let request = try #require(created.json?["paymentRequest"] as? [String: Any])
        let token = try MultiMerchantTests().token(
            for: request, to: MoreMerchants.platformProcessingKey.publicKey, merchant: TestMaterial.platformMerchantIdentifier)
        return try await server.send(
            "POST", "/api/apple-pay/authorize", host: domain, body: Array(#"{"orderId": "\#(id)", "payment": {"token": \#(token)}}"#.utf8))
    }

    /// Sets the partner's Worldpay processor and webhook through the admin API (a bad section
    /// first, which changes nothing) and returns a new API key's secret.
    func configure(_ server: ServerHarness, partner: String, mock: MockProcessors, receiver: MockWebhookReceiver) async throws
        -> String
    {
        // Before settings, the processor is record-only; a bad section changes nothing.
        let typo = try await admin(
            server, "PUT", "/admin/merchants/\(partner)/settings", #"{"processor": {"type": "worldpay", "entity": "x"}}"#)
        #expect(typo.status == 400)
        #expect(typo.errorMessage?.contains("username") == true)
        #expect(try await server.store.sealedMerchantSettings().isEmpty)

        // The mock is a test processor the configuration file lists (with its CA): the admin API
        // names only its origin.
        let account = ProcessorFixture.worldpay
        let settings = """
            {"processor": {"type": "worldpay", "baseURL": "\(mock.baseURL)",
                           "entity": "\(account.entity)", "username": "\(account.username)", "password": "\(account.password)"},
             "webhook": {"url": "\(receiver.url)", "secret": "\(Self.webhookSecret)"}}
            """
        let set = try await admin(server, "PUT", "/admin/merchants/\(partner)/settings", settings)
        #expect(set.status == 200)
        #expect(set.json?["processor"] as? String == "worldpay")
        #expect(!String(decoding: set.body, as: UTF8.self).contains(account.password))
        let sealed = try #require(try await server.store.sealedMerchantSettings()[Self.partner])
        #expect(!sealed.isEmpty)
        #expect(!String(decoding: sealed, as: UTF8.self).contains(account.password), "sealed, not stored in clear")

        let key = try await admin(server, "POST", "/admin/merchants/\(partner)/api-keys")
        #expect(key.status == 201)
        let secret = try #require(key.json?["secret"] as? String)
        let listed = try await admin(server, "GET", "/admin/merchants/\(partner)/api-keys")
        #expect(!String(decoding: listed.body, as: UTF8.self).contains(secret))
        return secret
    }

    @Test("register, set a Worldpay processor and a webhook, create a key, and the partner's shop takes a payment")
    func paysThroughItsProcessor() async throws {
        let mock = try MockProcessors(
            serverIdentity: TestMaterial.shared.server, worldpay: ProcessorFixture.worldpay, worldline: ProcessorFixture.worldline)
        try await mock.start()
        defer { Task { await mock.stop() } }
        let receiver = MockWebhookReceiver(secret: Self.webhookSecret)
        try await receiver.start()
        defer { Task { await receiver.stop() } }
        try await ServerHarness.with(
            otherMockMerchants: MoreMerchants.mockMerchants,
            environment: MoreMerchants.environment.merging(["SETTINGS_KEY": Self.settingsKey]) { $1 },
            callsShops: true,
            configure: { file, directory in
                try MoreMerchants.all(&file, directory)
                file.platformIntegrator?.settingsKey = "env:SETTINGS_KEY"
                file.webhooks = .init(firstRetrySeconds: 1, pollIntervalMilliseconds: 100)
                file.outbound = Self.loopbackForRegisteredMerchants(mock)
            }
        ) { server in
            let partner = Self.partner.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? ""
            let registered = try await admin(
                server, "POST", "/admin/merchants",
                #"{"partnerInternalMerchantIdentifier": "\#(Self.partner)", "partnerMerchantName": "Tea House", "domainNames": ["\#(Self.domain)"]}"#
            )
            #expect(registered.status == 201)

            let secret = try await configure(server, partner: partner, mock: mock, receiver: receiver)

            let paid = try await Self.pay(server, key: secret, domain: Self.domain, reference: "tea-9")
            #expect(paid.status == 200)
            let paymentId = try #require(paid.json?["paymentId"] as? String)
            let payment = try #require(try await server.store.payment(id: paymentId))
            #expect(payment.processor == "worldpay")
            #expect(mock.charges.contains { $0.reference == payment.reference && $0.amount == 740 })

            let seen = try await receiver.wait { $0.contains { $0.type == "payment.authorized" } }
            let event = try #require(seen.first { $0.type == "payment.authorized" })
            #expect(event.verified)
            #expect(event.json?["merchantIdentifier"] as? String == Self.partner)

            // A restart needs the key the settings were sealed with.
            var withoutKey = server.configuration
            withoutKey.settingsVault = nil
            await #expect(throws: ConfigurationError.self) { _ = try await withoutKey.loadRegisteredSettings(store: server.store) }
            var wrongKey = server.configuration
            wrongKey.settingsVault = SettingsVault(key: SymmetricKey(size: .bits256))
            do {
                _ = try await wrongKey.loadRegisteredSettings(store: server.store)
                Issue.record("a wrong key opened the settings")
            } catch {
                #expect((error as? ConfigurationError)?.message.contains("not the key they were sealed with") == true)
            }
            let reloaded = try await server.configuration.loadRegisteredSettings(store: server.store)
            #expect(reloaded[Self.partner]?.processor.type == "worldpay")
        }
    }
}
