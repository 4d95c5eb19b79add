import ApplePay
import CurlClient
import Foundation
import OrchardTesting
import Testing

@Suite("The mock gateway's Web Merchant Registration API applies Apple's rules")
struct MockRegistrationTests {
    static let platform = TestMaterial.platformMerchantIdentifier

    func start() async throws -> GatewayFixture {
        try await GatewayFixture.start(otherMerchants: [MockMerchant(merchantIdentifier: Self.platform, domains: [])])
    }

    func call(_ fixture: GatewayFixture, _ method: String, _ path: String, _ body: String? = nil, identity: TestCertificate) async throws
        -> CurlResponse
    {
        let client = try CurlHTTPClient()
        defer { client.shutdown() }
        return try await client.execute(
            CurlRequest(
                method: method, url: fixture.baseURL + "/paymentservices" + path,
                headers: [(name: "Content-Type", value: "application/json")],
                body: body.map { Array($0.utf8) },
                identity: .pem(certificate: Array(try identity.certificatePEM.utf8), key: Array(try identity.keyPEM.utf8)),
                trust: .caPEM(fixture.material.caPEM)))
    }

    func message(_ response: CurlResponse) -> String? {
        (try? JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any])?["statusMessage"] as? String
    }

    static func body(domains: String = #"["a.example"]"#, id: String = "partner-1", encryptTo: String = platform) -> String {
        #"{"domainNames": \#(domains), "partnerInternalMerchantIdentifier": "\#(id)", "partnerMerchantName": "Partner", "encryptTo": "\#(encryptTo)"}"#
    }

    @Test(
        "malformed or invalid registrations get Apple's errors",
        arguments: [
            (body(domains: #""a.example""#), 400, "Malformed Json"),
            (body(domains: #"[1]"#), 400, "Malformed Json"),
            ("not json", 400, "Malformed Json"),
            (body(domains: "[]"), 400, "domainNames is required"),
            (body(domains: "[" + (0..<100).map { "\"d\($0).example\"" }.joined(separator: ",") + "]"), 400, "exceeds 99"),
            (body(domains: #"["bad domain"]"#), 400, "invalid domain name"),
            (body(id: "bad/id"), 400, "partnerInternalMerchantIdentifier is invalid"),
            (body(encryptTo: "merchant.other"), 400, "encryptTo"),
        ])
    func invalid(body: String, status: Int, expected: String) async throws {
        let fixture = try await start()
        defer { Task { await fixture.gateway.stop() } }
        let response = try await call(fixture, "POST", "/registerMerchant", body, identity: TestMaterial.platformIdentity)
        #expect(response.status == status)
        #expect(message(response)?.contains(expected) == true, "\(message(response) ?? "")")
        #expect(fixture.gateway.partnerMerchants.isEmpty)
    }

    @Test("a certificate for a merchant the gateway does not know is unauthorized")
    func unauthorized() async throws {
        let fixture = try await GatewayFixture.start()
        defer { Task { await fixture.gateway.stop() } }
        let response = try await call(fixture, "POST", "/registerMerchant", Self.body(), identity: TestMaterial.platformIdentity)
        #expect(response.status == 401)
        // Apple's words, then that it is the mock and which platform identities it accepts.
        let refusal = message(response) ?? ""
        #expect(refusal.hasPrefix("Payment Services Exception Unauthorized (orchard-sandbox's mock Apple gateway: "), "\(refusal)")
        #expect(refusal.contains(TestMaterial.merchantIdentifier) && refusal.contains("orchard-sandbox demo --platform"), "\(refusal)")
    }

    @Test("register, details, partner sessions over the platform certificate, unregister")
    func lifecycle() async throws {
        let fixture = try await start()
        defer { Task { await fixture.gateway.stop() } }
        let platform = TestMaterial.platformIdentity
        #expect(
            try await call(fixture, "POST", "/registerMerchant", Self.body(domains: #"["a.example", "b.example"]"#), identity: platform)
                .status == 200)
        let details = try await call(fixture, "GET", "/merchant/partner-1", identity: platform)
        #expect(details.status == 200)
        let parsed = try JSONDecoder().decode(RegisteredMerchantDetails.self, from: Data(details.body))
        #expect(parsed.domainNames == ["a.example", "b.example"])
        #expect(parsed.encryptTo == Self.platform)
        // Another platform cannot see it.
        #expect(try await call(fixture, "GET", "/merchant/partner-1", identity: fixture.material.identity).status == 404)

        let session =
            #"{"merchantIdentifier": "partner-1", "displayName": "Partner", "initiative": "web", "initiativeContext": "b.example"}"#
        #expect(try await call(fixture, "POST", "/paymentSession", session, identity: platform).status == 200)
        #expect(try await call(fixture, "POST", "/paymentSession", session, identity: fixture.material.identity).status == 417)
        let elsewhere = session.replacingOccurrences(of: "b.example", with: "c.example")
        #expect(try await call(fixture, "POST", "/paymentSession", elsewhere, identity: platform).status == 400)

        let unregister = #"{"domainNames": ["a.example", "b.example"], "partnerInternalMerchantIdentifier": "partner-1", "reason": "gone"}"#
        #expect(try await call(fixture, "POST", "/unregisterMerchant", unregister, identity: platform).status == 200)
        #expect(fixture.gateway.partnerMerchants.isEmpty)
        #expect(try await call(fixture, "GET", "/merchant/partner-1", identity: platform).status == 404)
        #expect(try await call(fixture, "POST", "/paymentSession", session, identity: platform).status == 417)
    }
}
