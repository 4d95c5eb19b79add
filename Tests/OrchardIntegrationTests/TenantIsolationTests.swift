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
import Testing

/// A platform integrator's tenants never meet: a partner cannot take a configured merchant's or
/// the platform's identifier, and a partner that leaves takes its keys, mandates, settings and
/// undelivered events with it, so a later registration under its identifier starts clean.
@Suite("Tenants: reserved identifiers, retirement on unregistering, a clean new registration")
struct TenantIsolationTests {
    static let partner = "tenant-7"
    static let domain = "tenant7.example"
    static let settingsKey = String(repeating: "7a", count: 32)
    static let webhookSecret = String(repeating: "t", count: 40)

    static func with(
        receiver: MockWebhookReceiver, transport: HarnessTransport = .router, _ body: (ServerHarness) async throws -> Void
    ) async throws {
        try await ServerHarness.with(
            otherMockMerchants: MoreMerchants.mockMerchants,
            environment: MoreMerchants.environment.merging(["SETTINGS_KEY": settingsKey]) { $1 },
            callsShops: true, transport: transport,
            configure: { file, directory in
                try MoreMerchants.all(&file, directory)
                file.platformIntegrator?.settingsKey = "env:SETTINGS_KEY"
                file.webhooks = .init(firstRetrySeconds: 1, pollIntervalMilliseconds: 100)
                // The tenant's webhook receiver is on loopback, which only the file may allow.
                file.outbound = .init(registeredMerchants: .init(privateNetworks: ["127.0.0.0/8"]))
            }, body)
    }

    func admin(_ server: ServerHarness, _ method: String, _ path: String, _ body: String? = nil) async throws -> CurlResponse {
        try await server.send(method, path, body: body.map { Array($0.utf8) }, extraHeaders: MoreMerchants.authorization)
    }

    func register(_ server: ServerHarness, _ id: String) async throws -> CurlResponse {
        try await admin(
            server, "POST", "/admin/merchants",
            #"{"partnerInternalMerchantIdentifier": "\#(id)", "partnerMerchantName": "Tenant", "domainNames": ["\#(Self.domain)"]}"#)
    }

    @Test("a partner ID equal to a configured merchant's or the platform's (in any case) is refused before Apple is called")
    func reservedIdentifiers() async throws {
        let receiver = MockWebhookReceiver(secret: Self.webhookSecret)
        try await Self.with(receiver: receiver) { server in
            let calls = server.gateway.receivedRegistrationCalls.count
            for id in [
                TestMaterial.merchantIdentifier, TestMaterial.secondMerchantIdentifier, TestMaterial.platformMerchantIdentifier,
                TestMaterial.merchantIdentifier.uppercased(),
            ] {
                let refused = try await register(server, id)
                #expect(refused.status == 409, "\(id)")
                #expect(refused.errorCode == "identifier_taken")
            }
            #expect(server.gateway.receivedRegistrationCalls.count == calls, "Apple was never asked")
            #expect(try await server.store.registeredMerchants().isEmpty)
            // The configured merchant's keys and payments stay its own.
            let key = try await server.apiKey()
            #expect(try await server.api("GET", "/v1/mandates", key: key).status == 200)
        }
    }

    /// A recurring payment on the partner's domain, as the page sends it: the token is encrypted to
    /// the platform's key, the mandate is the partner's. The authorize answer.
    static func authorizeRecurring(_ server: ServerHarness, key: String, token: String, idempotencyKey: String) async throws
        -> CurlResponse
    {
        // A registered merchant has no catalogue, so no default country.
        let body = MandatesAPITests.recurring.replacingOccurrences(
            of: #""currency": "EUR","#, with: #""currency": "EUR", "countryCode": "FR","#)
        let created = try await server.api("POST", "/v1/payment-requests", key: key, json: body, idempotencyKey: idempotencyKey)
        #expect(created.status == 201, "\(created.errorMessage ?? "")")
        let id = try #require(created.json?["id"] as? String)
        let request = try #require(created.json?["paymentRequest"] as? [String: Any])
        let appData = try #require(Data(base64Encoded: request["applicationData"] as? String ?? ""))
        let minted = try PageCheckout.minter.mintEC(
            payload: TokenMinter.merchantTokenPayload(amount: 990, merchantTokenIdentifier: token),
            to: MoreMerchants.platformProcessingKey.publicKey, merchantIdentifier: TestMaterial.platformMerchantIdentifier,
            applicationDataHash: Array(SHA256.hash(data: appData)))
        return try await server.send(
            "POST", "/api/apple-pay/authorize", host: Self.domain, body: try PageCheckout.paymentBody(orderId: id, token: minted))
    }

    /// ``authorizeRecurring(_:key:token:idempotencyKey:)`` authorized: the mandate it made.
    func payRecurring(_ server: ServerHarness, key: String, token: String) async throws -> String {
        let authorized = try await Self.authorizeRecurring(server, key: key, token: token, idempotencyKey: "t-1")
        #expect(authorized.status == 200, "\(authorized.errorMessage ?? "")")
        let paymentId = try #require(authorized.json?["paymentId"] as? String)
        return try #require(try await server.store.payment(id: paymentId)?.mandateId)
    }

    /// The partner registered, its webhook set to `receiver`, a key made and a recurring payment
    /// paid with merchant token `token`: the key and the mandate.
    func onboard(_ server: ServerHarness, receiver: MockWebhookReceiver, token: String) async throws -> (key: String, mandate: String) {
        #expect(try await register(server, Self.partner).status == 201)
        let settings = #"{"webhook": {"url": "\#(receiver.url)", "secret": "\#(Self.webhookSecret)"}}"#
        #expect(try await admin(server, "PUT", "/admin/merchants/\(Self.partner)/settings", settings).status == 200)
        let key = try #require(try await admin(server, "POST", "/admin/merchants/\(Self.partner)/api-keys").json?["secret"] as? String)
        return (key, try await payRecurring(server, key: key, token: token))
    }

    @Test("unregistering the last domain revokes keys, ends mandates (unregistered), drops settings; a new registration starts clean")
    func retirement() async throws {
        let receiver = MockWebhookReceiver(secret: Self.webhookSecret)
        try await receiver.start()
        defer { Task { await receiver.stop() } }
        try await Self.with(receiver: receiver) { server in
            let (key, mandateId) = try await onboard(server, receiver: receiver, token: "DNITHE000000000000000077")
            _ = try await receiver.wait { $0.contains { $0.type == "mandate.created" } }

            let gone = try await admin(
                server, "POST", "/admin/merchants/\(Self.partner)/unregister", #"{"domainNames": ["\#(Self.domain)"], "reason": "left"}"#)
            #expect(gone.status == 200, "\(gone.errorMessage ?? "")")

            // Its key no longer opens anything, its mandate has ended and cannot be charged.
            #expect(try await server.api("GET", "/v1/mandates", key: key).status == 401)
            let mandate = try #require(try await server.store.mandate(id: mandateId))
            #expect(mandate.state == .ended && mandate.endedReason == "unregistered")
            // Apple deleted the merchant with its last domain before the mandates ended: no token
            // call is made for a merchant Apple no longer has.
            #expect(server.gateway.unlinkedTokens.isEmpty)
            // What it owned now belongs to its retirement, which no identifier can be.
            #expect(mandate.merchantIdentifier.hasPrefix("retired/\(Self.partner)/"))
            let retired = mandate.merchantIdentifier
            #expect(try await server.store.webhookEvents(merchantIdentifier: Self.partner, state: nil, limit: 50).isEmpty)
            let events = try await server.store.webhookEvents(merchantIdentifier: retired, state: nil, limit: 50)
            #expect(events.contains { $0.type == .mandateEnded && $0.state == .delivered })
            #expect(events.allSatisfy { $0.state != .pending }, "nothing of this tenant is left to send")
            // The shop heard it before its endpoint went with its settings.
            let told = try #require(receiver.deliveries.first { $0.type == "mandate.ended" })
            #expect(told.verified)
            #expect(
                (told.json?["data"] as? [String: Any]).flatMap { $0["mandate"] as? [String: Any] }?["endedReason"] as? String
                    == "unregistered")
            // Its settings are gone from the store and from this instance.
            #expect(try await server.store.sealedMerchantSettings()[Self.partner] == nil)
            #expect(try await admin(server, "GET", "/admin/merchants/\(Self.partner)/settings").status == 404)

            // A new tenant under the same identifier inherits nothing.
            #expect(try await register(server, Self.partner).status == 201)
            let fresh = try await admin(server, "GET", "/admin/merchants/\(Self.partner)/settings")
            #expect(fresh.status == 200)
            #expect(fresh.json?["processor"] as? String == "record")
            #expect(fresh.json?["webhookURL"] == nil)
            #expect(try await server.api("GET", "/v1/mandates", key: key).status == 401, "the old tenant's key stays revoked")
            #expect(try await server.store.apiKeys(merchantIdentifier: Self.partner).isEmpty)
            let keys = try await server.store.apiKeys(merchantIdentifier: retired)
            #expect(!keys.isEmpty && keys.allSatisfy { $0.revokedAt != nil })

            // The new tenant's own key reaches none of the old tenant's objects.
            let newKey = try #require(
                try await admin(server, "POST", "/admin/merchants/\(Self.partner)/api-keys").json?["secret"] as? String)
            let old = try #require(try await server.store.mandate(id: mandateId))
            for path in [
                "/v1/payment-requests/\(old.orderId)", "/v1/payments/\(old.paymentId)", "/v1/payments/\(old.paymentId)/refunds",
                "/v1/mandates/\(mandateId)",
            ] {
                let answer = try await server.api("GET", path, key: newKey)
                #expect(answer.status == 404, "\(path): \(answer.status)")
            }
            for path in ["/v1/payments/\(old.paymentId)/capture", "/v1/payments/\(old.paymentId)/cancel"] {
                #expect(try await server.api("POST", path, key: newKey).status == 404, "\(path)")
            }
            let refund = try await server.api(
                "POST", "/v1/payments/\(old.paymentId)/refunds", key: newKey, json: #"{"amount": 100}"#, idempotencyKey: "r-1")
            #expect(refund.status == 404)
            let listed = try await server.api("GET", "/v1/mandates", key: newKey)
            #expect(listed.status == 200 && (listed.json?["mandates"] as? [Any])?.isEmpty == true)
        }
    }

    @Test(
        "while Apple has not answered the unregistration, the tenant is already unserved: nothing charged or registered; after, no active mandate"
    )
    func leavingWhileAppleAnswers() async throws {
        let receiver = MockWebhookReceiver(secret: Self.webhookSecret)
        try await receiver.start()
        defer { Task { await receiver.stop() } }
        try await Self.with(receiver: receiver) { server in
            let (key, mandateId) = try await onboard(server, receiver: receiver, token: "DNITHE000000000000000078")

            server.gateway.holdUnregistrations()
            let leaving = Task {
                try await admin(
                    server, "POST", "/admin/merchants/\(Self.partner)/unregister",
                    #"{"domainNames": ["\#(Self.domain)"], "reason": "left"}"#)
            }
            // The first step is done once Apple is asked (it stops serving first), and Apple has
            // not answered: the registry lists it without domains.
            #expect(
                try await Eventually.until {
                    server.gateway.heldUnregistrationCount == 1
                })
            #expect(
                try await server.store.registeredMerchants().first { $0.partnerIdentifier == Self.partner }?.domains.isEmpty == true)
            #expect(try await server.api("GET", "/v1/mandates", key: key).status == 401, "its key is revoked")
            let charge = try await server.api(
                "POST", "/v1/mandates/\(mandateId)/charges", key: key, json: #"{"amount": 990, "currency": "EUR"}"#, idempotencyKey: "c-1")
            #expect(charge.status == 401, "no charge on its mandate while it leaves")
            #expect(try await server.requestSession(host: Self.domain).status == 421, "its domain is served no more")
            let registrations = server.gateway.receivedRegistrationCalls.filter {
                $0.path.hasSuffix("/registerMerchant") && String(decoding: $0.body, as: UTF8.self).contains(Self.partner)
            }
            #expect(registrations.count == 1, "registered once, never again while leaving")

            server.gateway.releaseUnregistrations()
            let gone = try await leaving.value
            #expect(gone.status == 200, "\(gone.errorMessage ?? "")")
            let mandate = try #require(try await server.store.mandate(id: mandateId))
            #expect(mandate.state == .ended && mandate.endedReason == "unregistered")
            let owned = try await server.store.mandates(merchantIdentifier: mandate.merchantIdentifier, state: .active, limit: 10)
            #expect(owned.isEmpty, "no active mandate left behind")
            #expect(try await server.store.registeredMerchants().isEmpty)
        }
    }

    @Test("a partner ID differing from a registered one only in letter case is refused before Apple is called")
    func caseVariants() async throws {
        let receiver = MockWebhookReceiver(secret: Self.webhookSecret)
        try await Self.with(receiver: receiver) { server in
            #expect(try await register(server, Self.partner).status == 201)
            let calls = server.gateway.receivedRegistrationCalls.count
            let refused = try await admin(
                server, "POST", "/admin/merchants",
                #"{"partnerInternalMerchantIdentifier": "\#(Self.partner.uppercased())", "partnerMerchantName": "Other", "domainNames": ["other7.example"]}"#
            )
            #expect(refused.status == 409 && refused.errorCode == "identifier_taken", "\(refused.status)")
            #expect(refused.errorMessage?.contains("letter case") == true)
            #expect(server.gateway.receivedRegistrationCalls.count == calls, "Apple was never asked")
            #expect(try await server.store.registeredMerchants().map(\.partnerIdentifier) == [Self.partner])
        }
    }
}
