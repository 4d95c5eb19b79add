import CurlClient
import Foundation
import OrchardConfiguration
import OrchardIntegrationTesting
import OrchardServer
import OrchardServerTesting
import OrchardServices
import OrchardTesting
import Testing

@Suite("POST /api/apple-pay/session over real mutual TLS")
struct MerchantSessionTests {
    @Test("the browser gets the mock's session byte for byte, and the mock saw exactly the four fields")
    func success() async throws {
        try await ServerHarness.with { server in
            let response = try await server.requestSession()
            #expect(response.status == 200)
            #expect(response.header("content-type") == "application/json")
            let issued = server.gateway.issuedSessions
            #expect(issued.count == 1)
            #expect(response.body == issued.first)
            let received = try #require(server.gateway.receivedSessionRequests.first)
            #expect(
                received.fields == [
                    "merchantIdentifier": TestMaterial.merchantIdentifier,
                    "displayName": "Orchard Test Shop",
                    "initiative": "web",
                    "initiativeContext": ServerHarness.domain,
                ])
            #expect(received.path == "/paymentservices/paymentSession")
        }
    }

    @Test("no body, an empty object and a Host with a port all work; the domain comes from configuration")
    func optionalValidationURL() async throws {
        try await ServerHarness.with { server in
            let r1 = try await server.requestSession(validationURL: nil)
            #expect(r1.status == 200)
            let r2 = try await server.send("POST", "/api/apple-pay/session", body: Array("{}".utf8))
            #expect(r2.status == 200)
            let r3 = try await server.requestSession(host: "SHOP.example:443")
            #expect(r3.status == 200)
            #expect(
                server.gateway.receivedSessionRequests.map { $0.fields["initiativeContext"] } == Array(repeating: "shop.example", count: 3))
        }
    }

    static let hostileURLs: [String] = [
        "https://apple-pay-gateway.apple.com@evil.test/",
        "https://apple-pay-gateway.apple.com@evil.test/paymentservices/paymentSession",
        "https://user:pass@apple-pay-gateway.apple.com/paymentservices/paymentSession",
        "https://apple-pay-gateway.apple.com.evil.test/paymentservices/paymentSession",
        "https://evil-apple-pay-gateway.apple.com/paymentservices/paymentSession",
        "https://evil.test/paymentservices/paymentSession",
        "http://apple-pay-gateway.apple.com/paymentservices/paymentSession",
        "ftp://apple-pay-gateway.apple.com/paymentservices/paymentSession",
        "//apple-pay-gateway.apple.com/paymentservices/paymentSession",
        "https://apple-pay-gateway.apple.com:8443/paymentservices/paymentSession",
        "https://apple-pay-gateway.apple.com:443@evil.test/",
        "https://apple-pay-gateway.apple.com:0443/paymentservices/paymentSession",
        "https://17.141.128.7/paymentservices/paymentSession",
        "https://127.0.0.1/paymentservices/paymentSession",
        "https://[::1]/paymentservices/paymentSession",
        "https://[2620:149:a44::1]/paymentservices/paymentSession",
        "https://APPLE-PAY-GATEWAY.APPLE.COM/paymentservices/paymentSession",
        "HTTPS://apple-pay-gateway.apple.com/paymentservices/paymentSession",
        "https://apple-pay-gateway.apple.com./paymentservices/paymentSession",
        "https://apple-pay-gateway%2eapple.com/paymentservices/paymentSession",
        "https://apple-pay-gateway.apple.com%2f@evil.test/",
        "https://\u{0430}pple-pay-gateway.apple.com/paymentservices/paymentSession",  // Cyrillic a
        "https://apple-pay-gateway.apple.com\u{2024}evil.test/",  // one-dot leader
        "https://xn--pple-pay-gateway-5of.apple.com/paymentservices/paymentSession",
        "https://apple-pay-gateway.apple.com\\@evil.test/",
        "https://apple-pay-gateway.apple.com/paymentservices/paymentSession?next=https://evil.test",
        "https://apple-pay-gateway.apple.com/paymentservices/paymentSession#@evil.test",
        "https://apple-pay-gateway.apple.com/../evil",
        " https://apple-pay-gateway.apple.com/paymentservices/paymentSession",
        "https://apple-pay-gateway.apple.com/paymentservices/paymentSession\r\nHost: evil.test",
        "javascript:alert(1)",
        "",
        "https://apple-pay-gateway.apple.com/" + String(repeating: "a", count: 10 * 1024),
    ]

    static let hostileBodies: [String] = [
        #"{"validationURL": 42}"#,
        #"{"validationURL": true}"#,
        #"{"validationURL": ["https://apple-pay-gateway.apple.com/paymentservices/paymentSession"]}"#,
        #"{"validationURL": {"host": "apple-pay-gateway.apple.com"}}"#,
        #"{"validationURL": "https://apple-pay-gateway.apple.com/paymentservices/paymentSession""#,
        #"{validationURL: "https://apple-pay-gateway.apple.com/"}"#,
        #"["https://apple-pay-gateway.apple.com/paymentservices/paymentSession"]"#,
        #""https://apple-pay-gateway.apple.com/paymentservices/paymentSession""#,
        "null",
        "not json",
    ]

    @Test("hostile validation URLs and bodies get 400 and no connection is made anywhere")
    func hostileInput() async throws {
        try await ServerHarness.with { server in
            #expect(Self.hostileURLs.count + Self.hostileBodies.count >= 15)
            for url in Self.hostileURLs {
                let response = try await server.requestSession(validationURL: url)
                #expect(response.status == 400, "\(url.prefix(80)) → \(response.status)")
                #expect(response.errorCode == "invalid_validation_url", "\(url.prefix(80))")
            }
            for body in Self.hostileBodies {
                let response = try await server.send("POST", "/api/apple-pay/session", body: Array(body.utf8))
                #expect(response.status == 400, "\(body) → \(response.status)")
                #expect(response.errorCode == "invalid_json", "\(body)")
            }
            #expect(server.sessions.count == 0)
            #expect(server.gateway.stats.connections == 0)
            #expect(server.gateway.stats.requests == 0)
        }
    }

    @Test("an oversized body is refused with 413 before anything is sent")
    func oversizedBody() async throws {
        try await ServerHarness.with { server in
            let body = Array(#"{"validationURL": ""#.utf8) + Array(repeating: UInt8(ascii: "a"), count: 64 * 1024) + Array(#""}"#.utf8)
            let response = try await server.send("POST", "/api/apple-pay/session", body: body)
            #expect(response.status == 413)
            #expect(response.errorCode == "payload_too_large")
            #expect(server.gateway.stats.connections == 0)
        }
    }

    @Test("an unknown Host gets 421 and nothing is sent")
    func unknownHost() async throws {
        try await ServerHarness.with { server in
            for host in ["evil.test", "shop.example.evil.test", "127.0.0.1", "shop.example.", "xshop.example"] {
                let response = try await server.requestSession(host: host)
                #expect(response.status == 421, "\(host)")
                #expect(response.errorCode == "unknown_host")
            }
            #expect(server.sessions.count == 0)
            #expect(server.gateway.stats.connections == 0)
        }
    }

    @Test(
        "gateway errors become 502, a slow gateway 504, and the server stays up",
        arguments: [
            (MockGatewayFaults(status: 400), 502, "gateway_rejected"),
            (MockGatewayFaults(status: 417), 502, "gateway_rejected"),
            (MockGatewayFaults(status: 500), 502, "gateway_rejected"),
            (MockGatewayFaults(status: 503), 502, "gateway_rejected"),
            (MockGatewayFaults(resetConnection: true), 502, "gateway_unavailable"),
            (MockGatewayFaults(latency: .seconds(3)), 504, "gateway_timeout"),
            (MockGatewayFaults(slowBody: .seconds(3)), 504, "gateway_timeout"),
        ])
    func gatewayFaults(faults: MockGatewayFaults, status: Int, code: String) async throws {
        // Only the slow cases need a deadline under the mock's 3 s; the others keep the harness's
        // 10 s, as a loaded CI machine once took over a second for the handshake before a reset.
        try await ServerHarness.with(faults: faults, timeoutMilliseconds: status == 504 ? 1500 : 10_000) { server in
            let started = ContinuousClock.now
            let response = try await server.requestSession()
            // What the gateway saw tells a slow handshake from a reset that went unnoticed.
            let seen = "after \(ContinuousClock.now - started), gateway saw \(server.gateway.stats.snapshot)"
            #expect(response.status == status, "\(seen)")
            #expect(response.errorCode == code, "\(seen)")
            // Apple's own message never reaches the browser.
            #expect(response.errorMessage?.contains("Injected") == false)
            let r4 = try await server.send("GET", "/health")
            #expect(r4.status == 200)
            server.gateway.faults = .none
            let r5 = try await server.requestSession()
            #expect(r5.status == 200)
        }
    }

    @Test("Apple's refusal of an unregistered domain is a 502 without Apple's message")
    func unregisteredDomain() async throws {
        try await ServerHarness.with { server in
            let response = try await server.requestSession(host: ServerHarness.unregisteredDomain)
            #expect(response.status == 502)
            #expect(response.errorCode == "gateway_rejected")
            #expect(response.errorMessage?.contains("not registered") == false)
            #expect(server.gateway.stats.requests == 1)
        }
    }

    @Test("50 sequential validations use at most 2 TLS handshakes")
    func connectionReuse() async throws {
        try await ServerHarness.with { server in
            for _ in 0..<50 {
                let r6 = try await server.requestSession()
                #expect(r6.status == 200)
            }
            #expect(server.gateway.stats.sessionsIssued == 50)
            #expect(server.gateway.stats.tlsHandshakes <= 2)
        }
    }

    @Test("the domain association file is served byte for byte, by Host")
    func domainAssociation() async throws {
        try await ServerHarness.with { server in
            let path = "/.well-known/apple-developer-merchantid-domain-association"
            let response = try await server.send("GET", path)
            #expect(response.status == 200)
            #expect(response.body == ServerHarness.associationFile)
            #expect(response.header("content-type") == "text/plain")
            let r7 = try await server.send("GET", path, host: ServerHarness.unregisteredDomain)
            #expect(r7.body == ServerHarness.associationFile)
            let unknown = try await server.send("GET", path, host: "evil.test")
            #expect(unknown.status == 404)
        }
    }

    @Test("/health says only ok, whatever the Host; /admin/health, behind the admin token, has each identity's days left")
    func health() async throws {
        try await ServerHarness.with(environment: MoreMerchants.environment, configure: { file, _ in MoreMerchants.addAdmin(&file) }) {
            server in
            for host in [ServerHarness.domain, "elsewhere.example", "127.0.0.1"] {
                let response = try await server.send("GET", "/health", host: host)
                #expect(response.status == 200)
                #expect(
                    String(decoding: response.body, as: UTF8.self) == #"{"status":"ok"}"#, "no certificate or merchant detail in public")
                #expect(response.header("cache-control") == "no-store")
            }
            #expect(try await server.send("GET", "/admin/health").status == 401)
            let response = try await server.send("GET", "/admin/health", extraHeaders: MoreMerchants.authorization)
            #expect(response.status == 200)
            #expect(response.json?["readiness"] as? String == "ok")
            let merchants = try #require(response.json?["merchants"] as? [[String: Any]])
            let days = (merchants.first?["identityCertificate"] as? [String: Any])?["daysLeft"] as? Int
            #expect((360...366).contains(days ?? -1))
        }
    }

    @Test("without an admin token there is no /admin/health at all")
    func noAdminHealth() async throws {
        try await ServerHarness.with { server in
            let response = try await server.send("GET", "/admin/health")
            #expect(response.status == 404)
        }
    }

    @Test("/health answers 503 draining once a shutdown begins, on any Host")
    func draining() async throws {
        let readiness = ServerActivity()
        try await ServerHarness.with(activity: readiness) { server in
            #expect(try await server.send("GET", "/health").status == 200)
            readiness.beginDraining()
            for host in [ServerHarness.domain, "elsewhere.example"] {
                let response = try await server.send("GET", "/health", host: host)
                #expect(response.status == 503)
                #expect(String(decoding: response.body, as: UTF8.self) == #"{"status":"draining"}"#)
            }
        }
    }

    @Test("readiness: starting until the server listens, then ready; draining is final")
    func readiness() {
        let readiness = ServerActivity()
        #expect(readiness.state == .starting)
        readiness.markReady()
        #expect(readiness.state == .ready)
        readiness.beginDraining()
        readiness.markReady()
        #expect(readiness.state == .draining, "a drain is never undone")
    }
}
