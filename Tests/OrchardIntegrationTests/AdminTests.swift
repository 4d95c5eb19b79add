import ApplePay
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

@Suite("Admin API and domain registration with Apple (mock gateway over mutual TLS)")
struct AdminTests {
    static let partner = "shop-42|eu"
    static let domains = ["shop42.example", "www.shop42.example"]

    static func with(_ body: (ServerHarness) async throws -> Void) async throws {
        try await MoreMerchants.with(body)
    }

    func admin(_ server: ServerHarness, _ method: String, _ path: String, _ body: String? = nil) async throws -> CurlResponse {
        try await server.send(method, path, body: body.map { Array($0.utf8) }, extraHeaders: MoreMerchants.authorization)
    }

    func register(_ server: ServerHarness, id: String = partner, domains: [String] = domains, extra: String = "") async throws
        -> CurlResponse
    {
        let list = domains.map { "\"\($0)\"" }.joined(separator: ",")
        return try await admin(
            server, "POST", "/admin/merchants",
            #"{"partnerInternalMerchantIdentifier": "\#(id)", "partnerMerchantName": "Shop 42", "domainNames": [\#(list)]\#(extra)}"#)
    }

    @Test("without admin.token the admin API does not exist")
    func off() async throws {
        try await ServerHarness.with { server in
            let response = try await server.send("GET", "/admin/merchants", extraHeaders: MoreMerchants.authorization)
            #expect(response.status == 404)
        }
    }

    @Test("no, malformed or wrong bearer tokens get 401 with WWW-Authenticate; the right one gets the listing")
    func bearer() async throws {
        try await Self.with { server in
            let wrong = [
                [], [(name: "Authorization", value: "Bearer")], [(name: "Authorization", value: "Basic \(MoreMerchants.adminToken)")],
                [(name: "Authorization", value: "Bearer \(MoreMerchants.adminToken.dropLast())")],
                [(name: "Authorization", value: "Bearer \(MoreMerchants.adminToken)x")],
                [(name: "Authorization", value: "Bearer \(String(repeating: MoreMerchants.adminToken, count: 9))")],
            ]
            for headers in wrong {
                let response = try await server.send("GET", "/admin/merchants", extraHeaders: headers)
                #expect(response.status == 401, "\(headers)")
                #expect(CheckoutTests.header("WWW-Authenticate", in: response) == "Bearer")
            }
            let lower = try await server.send(
                "GET", "/admin/merchants", extraHeaders: [(name: "Authorization", value: "bearer \(MoreMerchants.adminToken)")])
            #expect(lower.status == 200)
            let listing = try #require(try await admin(server, "GET", "/admin/merchants").json)
            #expect(listing["platformIntegrator"] as? String == TestMaterial.platformMerchantIdentifier)
            #expect(
                (listing["configured"] as? [[String: Any]])?.map { $0["merchantIdentifier"] as? String } == [
                    TestMaterial.merchantIdentifier, TestMaterial.secondMerchantIdentifier,
                ])
            #expect((listing["registered"] as? [Any])?.isEmpty == true)
        }
    }

    @Test("register → served through the platform → details → unregister one domain, then the last")
    func lifecycle() async throws {
        try await Self.with { server in
            let created = try await register(server, extra: #", "merchantUrl": "https://shop42.example""#)
            #expect(created.status == 201)
            #expect(created.json?["domains"] as? [String] == Self.domains)
            let call = try #require(server.gateway.receivedRegistrationCalls.last)
            #expect(call.path == "/paymentservices/registerMerchant")
            #expect(call.clientMerchantHash == MerchantIdentifierExtension.hash(of: TestMaterial.platformMerchantIdentifier))
            let sent = try #require(try JSONSerialization.jsonObject(with: Data(call.body)) as? [String: Any])
            #expect(sent["encryptTo"] as? String == TestMaterial.platformMerchantIdentifier)
            #expect(sent["domainNames"] as? [String] == Self.domains)
            #expect(server.gateway.partnerMerchants[Self.partner]?.domainNames == Self.domains)

            // The new domains are served: the platform's association file, sessions under the partner's ID.
            let association = try await server.send(
                "GET", "/.well-known/apple-developer-merchantid-domain-association", host: "www.shop42.example")
            #expect(association.body == MoreMerchants.platformAssociation)
            let session = try await server.requestSession(host: "shop42.example")
            #expect(session.status == 200)
            let request = try #require(server.gateway.receivedSessionRequests.last)
            #expect(request.fields["merchantIdentifier"] == Self.partner)
            #expect(request.fields["displayName"] == "Shop 42")
            #expect(request.fields["initiativeContext"] == "shop42.example")
            #expect(request.clientMerchantHash == MerchantIdentifierExtension.hash(of: TestMaterial.platformMerchantIdentifier))
            #expect(try await server.store.registeredMerchants().map(\.partnerIdentifier) == [Self.partner])

            let escaped = "shop-42%7Ceu"
            let details = try #require(try await admin(server, "GET", "/admin/merchants/\(escaped)").json)
            #expect((details["apple"] as? [String: Any])?["domainNames"] as? [String] == Self.domains)
            #expect((details["registered"] as? [String: Any])?["name"] as? String == "Shop 42")

            let partial = try await admin(
                server, "POST", "/admin/merchants/\(escaped)/unregister", #"{"domainNames": ["www.shop42.example"], "reason": "moved"}"#)
            #expect(partial.status == 200, "\(partial.errorMessage ?? "")")
            #expect(partial.json?["remainingDomains"] as? [String] == ["shop42.example"])
            #expect(try await server.requestSession(host: "www.shop42.example").status == 421)
            #expect(try await server.requestSession(host: "shop42.example").status == 200)

            let last = try await admin(
                server, "POST", "/admin/merchants/\(escaped)/unregister", #"{"domainNames": ["shop42.example"], "reason": "closed"}"#)
            #expect(last.status == 200)
            #expect(server.gateway.partnerMerchants[Self.partner] == nil)
            #expect(try await server.store.registeredMerchants().isEmpty)
            #expect(try await admin(server, "GET", "/admin/merchants/\(escaped)").status == 404)
            #expect(try await server.requestSession(host: "shop42.example").status == 421)
        }
    }

    @Test("invalid registrations and taken domains are refused before Apple is called, and change nothing")
    func refusedLocally() async throws {
        try await Self.with { server in
            #expect(try await register(server, id: "other", domains: ["other.example"]).status == 201)
            let callsBefore = server.gateway.receivedRegistrationCalls.count
            let registryBefore = try await server.store.registeredMerchants()
            let cases: [(CurlResponse, Int, String)] = [
                (try await register(server, domains: (0..<100).map { "d\($0).example" }), 400, "invalid_registration"),
                (try await register(server, domains: []), 400, "invalid_registration"),
                (try await register(server, domains: ["not a domain"]), 400, "invalid_registration"),
                (try await register(server, domains: ["127.0.0.1."]), 400, "invalid_registration"),
                (try await register(server, domains: ["a.example", "A.example"]), 400, "invalid_registration"),
                (try await register(server, id: "bad/id"), 400, "invalid_registration"),
                (try await register(server, id: "spaces are bad"), 400, "invalid_registration"),
                (try await register(server, extra: #", "merchantUrl": "http://shop42.example""#), 400, "invalid_registration"),
                // Found by the API fuzzing (Apple's refusal was a 502): tokens encrypted to anyone but the
                // platform could never be decrypted, so Orchard refuses that itself.
                (try await register(server, extra: #", "encryptTo": "merchant.someone.else""#), 400, "invalid_registration"),
                (try await register(server, extra: #", "encryptTo": "<;i\u0011Y""#), 400, "invalid_registration"),
                (try await register(server, domains: [ServerHarness.domain]), 409, "domain_taken"),
                (try await register(server, domains: [MoreMerchants.secondDomain]), 409, "domain_taken"),
                (try await register(server, domains: ["other.example"]), 409, "domain_taken"),
                (try await admin(server, "POST", "/admin/merchants", #"{"domainNames": "shop42.example"}"#), 400, "invalid_json"),
                (
                    try await admin(
                        server, "POST", "/admin/merchants/other/unregister", #"{"domainNames": ["nope.example"], "reason": "x"}"#),
                    404, "not_found"
                ),
                (
                    try await admin(
                        server, "POST", "/admin/merchants/other/unregister", #"{"domainNames": ["other.example"], "reason": ""}"#),
                    400, "invalid_registration"
                ),
            ]
            for (index, (response, status, code)) in cases.enumerated() {
                #expect(response.status == status, "case \(index)")
                #expect(response.errorCode == code, "case \(index): \(response.errorMessage ?? "")")
            }
            #expect(server.gateway.receivedRegistrationCalls.count == callsBefore)
            #expect(try await server.store.registeredMerchants() == registryBefore)
        }
    }

    @Test("Apple's refusal comes back with Apple's status and message, and the registry is unchanged")
    func appleRefuses() async throws {
        try await Self.with { server in
            // Another platform (the second merchant) registered shop42.example at Apple; this server cannot know that.
            let client = try CurlHTTPClient()
            defer { client.shutdown() }
            let identity = TestMaterial.secondIdentity
            let elsewhere = try await client.execute(
                CurlRequest(
                    method: "POST", url: server.fixture.baseURL + "/paymentservices/registerMerchant",
                    headers: [(name: "Content-Type", value: "application/json")],
                    body: Array(
                        #"{"domainNames": ["shop42.example"], "partnerInternalMerchantIdentifier": "elsewhere", "partnerMerchantName": "Elsewhere", "encryptTo": "\#(TestMaterial.secondMerchantIdentifier)"}"#
                            .utf8),
                    identity: .pem(certificate: Array(try identity.certificatePEM.utf8), key: Array(try identity.keyPEM.utf8)),
                    trust: .caPEM(server.fixture.material.caPEM)))
            #expect(elsewhere.status == 200)
            let refused = try await register(server)
            #expect(refused.status == 502)
            #expect(refused.errorCode == "registration_rejected")
            #expect((refused.json?["error"] as? [String: Any])?["appleStatus"] as? Int == 400)
            #expect(refused.errorMessage?.contains("already registered") == true)
            #expect(try await server.store.registeredMerchants().isEmpty)
            #expect(try await server.requestSession(host: "shop42.example").status == 421)
        }
    }

    @Test("with an admin token but no platform integrator, registration says what is missing")
    func noPlatform() async throws {
        try await ServerHarness.with(environment: MoreMerchants.environment, configure: { file, _ in MoreMerchants.addAdmin(&file) }) {
            server in
            let response = try await register(server)
            #expect(response.status == 501)
            #expect(response.errorMessage?.contains("platformIntegrator") == true)
        }
    }

    @Test("a token shorter than 32 characters, or written in the configuration itself, is refused at startup")
    func weakToken() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        var file = try ServerHarness.configurationFile(gatewayPort: 1, directory: directory)
        file.admin = .init(token: "env:SHORT")
        #expect(throws: ConfigurationError.self) {
            try ServerConfiguration.resolve(file, relativeTo: directory.url.path, environment: ["SHORT": "tooshort"])
        }
        file.admin = .init(token: MoreMerchants.adminToken)
        #expect {
            try ServerConfiguration.resolve(file, relativeTo: directory.url.path)
        } throws: { error in
            (error as? ConfigurationError)?.message.contains("cannot read admin.token") == true
        }
    }

    @Test("/admin/doctor checks the loaded setup, and live asks Apple for each domain in plain words")
    func doctor() async throws {
        try await Self.with { server in
            let offline = try await admin(server, "GET", "/admin/doctor")
            #expect(offline.status == 200)
            let report = try #require(offline.json)
            let checks = try #require(report["checks"] as? [[String: Any]])
            #expect(!checks.contains { ($0["check"] as? String)?.hasPrefix("session") == true })
            #expect(checks.contains { $0["check"] as? String == "processing key 1" && $0["passed"] as? Bool == true })
            let live = try #require(try await admin(server, "GET", "/admin/doctor?live=true").json)
            #expect(live["passed"] as? Bool == false)
            let sessions = (live["checks"] as? [[String: Any]] ?? []).filter {
                ($0["subject"] as? String) == TestMaterial.merchantIdentifier
            }
            #expect(sessions.contains { $0["check"] as? String == "session shop.example" && $0["passed"] as? Bool == true })
            #expect(
                sessions.contains {
                    $0["check"] as? String == "session unregistered.example"
                        && ($0["detail"] as? String)?.hasPrefix("Apple does not know this domain for the merchant") == true
                })
            #expect(try await server.send("GET", "/admin/doctor").status == 401)
        }
    }
}
