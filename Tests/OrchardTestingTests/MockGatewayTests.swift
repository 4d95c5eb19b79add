import ApplePay
import CurlClient
import Foundation
import OrchardTesting
import Testing

@Suite("The mock Apple gateway applies Apple's rules")
struct MockGatewayTests {
    func post(_ fixture: GatewayFixture, path: String = "/paymentservices/paymentSession", _ body: String, identity: TestCertificate? = nil)
        async throws -> CurlResponse
    {
        let identity = identity ?? fixture.material.identity
        let client = try CurlHTTPClient()
        defer { client.shutdown() }
        return try await client.execute(
            CurlRequest(
                method: "POST", url: fixture.baseURL + path, headers: [(name: "Content-Type", value: "application/json")],
                body: Array(body.utf8),
                identity: .pem(certificate: Array(try identity.certificatePEM.utf8), key: Array(try identity.keyPEM.utf8)),
                trust: .caPEM(fixture.material.caPEM)))
    }

    func appleError(_ response: CurlResponse) -> (code: String?, message: String?) {
        let object = try? JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any]
        return (object?["statusCode"] as? String, object?["statusMessage"] as? String)
    }

    static let merchant = TestMaterial.merchantIdentifier

    @Test("a valid request gets an Apple-shaped session")
    func session() async throws {
        let fixture = try await GatewayFixture.start()
        defer { Task { await fixture.gateway.stop() } }
        let response = try await post(
            fixture,
            #"{"merchantIdentifier":"\#(Self.merchant)","displayName":"Shop","initiative":"web","initiativeContext":"shop.example"}"#)
        #expect(response.status == 200)
        let session = try #require(try JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any])
        for key in [
            "epochTimestamp", "expiresAt", "merchantSessionIdentifier", "nonce", "merchantIdentifier", "domainName", "displayName",
            "signature", "operationalAnalyticsIdentifier", "retries", "pspId",
        ] {
            #expect(session[key] != nil, "\(key)")
        }
        #expect(session["merchantIdentifier"] as? String == MerchantIdentifierExtension.hash(of: Self.merchant))
        #expect((session["expiresAt"] as? Int ?? 0) > (session["epochTimestamp"] as? Int ?? .max))
    }

    @Test(
        "bad requests get Apple-shaped errors",
        arguments: [
            (
                #"{"merchantIdentifier":"M","displayName":"Shop","initiative":"web","initiativeContext":"shop.example"}"#, 417,
                "does not match"
            ),
            (
                #"{"merchantIdentifier":"MERCHANT","displayName":"\#(String(repeating: "x", count: 65))","initiative":"web","initiativeContext":"shop.example"}"#,
                400, "exceeds 64"
            ),
            (
                #"{"merchantIdentifier":"MERCHANT","displayName":"Shop","initiative":"ios","initiativeContext":"shop.example"}"#, 400,
                "initiative=ios"
            ),
            (
                #"{"merchantIdentifier":"MERCHANT","displayName":"Shop","initiative":"web","initiativeContext":"evil.test"}"#, 400,
                "not registered for domain=evil.test"
            ),
            (#"{"merchantIdentifier":"MERCHANT","displayName":"Shop","initiative":"web"}"#, 400, "initiativeContext is required"),
            (
                #"{"merchantIdentifier":"MERCHANT","displayName":5,"initiative":"web","initiativeContext":"shop.example"}"#, 400,
                "Malformed Json"
            ),
            (#"{"merchantIdentifier":"MERCHANT""#, 400, "Malformed Json"),
        ])
    func rejections(body: String, status: Int, message: String) async throws {
        let fixture = try await GatewayFixture.start()
        defer { Task { await fixture.gateway.stop() } }
        let response = try await post(fixture, body.replacingOccurrences(of: "MERCHANT", with: Self.merchant))
        #expect(response.status == status)
        let error = appleError(response)
        #expect(error.code == String(status))
        #expect(error.message?.contains(message) == true, "\(error.message ?? "")")
        #expect(fixture.gateway.stats.sessionsIssued == 0)
    }

    @Test("the legacy startSession body is accepted")
    func legacy() async throws {
        let fixture = try await GatewayFixture.start()
        defer { Task { await fixture.gateway.stop() } }
        let response = try await post(
            fixture, path: "/paymentservices/startSession",
            #"{"merchantIdentifier":"\#(Self.merchant)","domainName":"shop.example","displayName":"Shop"}"#)
        #expect(response.status == 200)
    }

    @Test("a merchant certificate for another merchant ID is refused with 417")
    func wrongCertificate() async throws {
        let fixture = try await GatewayFixture.start()
        defer { Task { await fixture.gateway.stop() } }
        let other = try fixture.material.pki.issueMerchantIdentity(merchantIdentifier: "merchant.someone.else")
        let response = try await post(
            fixture,
            #"{"merchantIdentifier":"\#(Self.merchant)","displayName":"Shop","initiative":"web","initiativeContext":"shop.example"}"#,
            identity: other)
        #expect(response.status == 417)
    }

    @Test("counts are served at /_mock/stats")
    func stats() async throws {
        let fixture = try await GatewayFixture.start()
        defer { Task { await fixture.gateway.stop() } }
        let client = try CurlHTTPClient()
        defer { client.shutdown() }
        let identity = TLSIdentity.pem(
            certificate: Array(try fixture.material.identity.certificatePEM.utf8), key: Array(try fixture.material.identity.keyPEM.utf8))
        var request = CurlRequest(url: fixture.baseURL + "/_mock/stats", identity: identity, trust: .caPEM(fixture.material.caPEM))
        _ = try await client.execute(request)
        request.url = fixture.baseURL + "/_mock/stats"
        let response = try await client.execute(request)
        let snapshot = try JSONDecoder().decode(MockGatewayStats.Snapshot.self, from: Data(response.body))
        #expect(snapshot.requests == 2)
        #expect(snapshot.tlsHandshakes == 1)
        #expect(snapshot.connections == 1)
        #expect(snapshot.sessionsIssued == 0)
    }
}
