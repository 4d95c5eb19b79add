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

@Suite("Many merchants on one server: each host sees only its own merchant")
struct MultiMerchantTests {
    let minter = TokenMinter(chain: ServerHarness.tokenChain)

    static func with(_ body: (ServerHarness) async throws -> Void) async throws {
        try await ServerHarness.with(
            otherMockMerchants: MoreMerchants.mockMerchants, environment: MoreMerchants.environment, configure: MoreMerchants.all, body)
    }

    func order(_ server: ServerHarness, host: String) async throws -> (id: String, request: [String: Any]) {
        let response = try await server.send(
            "POST", "/api/orders", host: host, body: Array(#"{"items": [{"productId": "apple", "quantity": 1}]}"#.utf8))
        #expect(response.status == 201)
        let json = try #require(response.json)
        return (try #require(json["orderId"] as? String), try #require(json["paymentRequest"] as? [String: Any]))
    }

    func token(for request: [String: Any], to key: P256.KeyAgreement.PublicKey, merchant: String) throws -> String {
        let appData = try #require(Data(base64Encoded: request["applicationData"] as? String ?? ""))
        let paymentData = try minter.mintEC(
            payload: TokenMinter.samplePayload(amount: 740), to: key, merchantIdentifier: merchant,
            applicationDataHash: Array(SHA256.hash(data: appData)))
        return String(decoding: try JSONEncoder().encode(PaymentToken(paymentData: paymentData)), as: UTF8.self)
    }

    @Test("sessions: each domain's request carries its own merchant ID, certificate and domain, whatever the body says")
    func sessions() async throws {
        try await Self.with { server in
            let first = try await server.requestSession()
            #expect(first.status == 200)
            let a = try #require(server.gateway.receivedSessionRequests.last)
            #expect(a.fields["merchantIdentifier"] == TestMaterial.merchantIdentifier)
            #expect(a.fields["initiativeContext"] == ServerHarness.domain)
            #expect(a.clientMerchantHash == MerchantIdentifierExtension.hash(of: TestMaterial.merchantIdentifier))

            let second = try await server.requestSession(host: MoreMerchants.secondDomain)
            #expect(second.status == 200)
            let b = try #require(server.gateway.receivedSessionRequests.last)
            #expect(b.fields["merchantIdentifier"] == TestMaterial.secondMerchantIdentifier)
            #expect(b.fields["initiativeContext"] == MoreMerchants.secondDomain)
            #expect(b.fields["displayName"] == "Second Shop")
            #expect(b.clientMerchantHash == MerchantIdentifierExtension.hash(of: TestMaterial.secondMerchantIdentifier))

            // A page on A naming B in the body still gets A's session.
            let smuggled = try await server.send(
                "POST", "/api/apple-pay/session",
                body: Array(
                    #"{"validationURL": "https://apple-pay-gateway.apple.com/paymentservices/paymentSession", "merchantIdentifier": "\#(TestMaterial.secondMerchantIdentifier)", "initiativeContext": "\#(MoreMerchants.secondDomain)", "domainName": "\#(MoreMerchants.secondDomain)"}"#
                        .utf8))
            #expect(smuggled.status == 200)
            let last = try #require(server.gateway.receivedSessionRequests.last)
            #expect(last.fields["merchantIdentifier"] == TestMaterial.merchantIdentifier)
            #expect(last.fields["initiativeContext"] == ServerHarness.domain)
            let session = try #require(smuggled.json)
            #expect(session["domainName"] as? String == ServerHarness.domain)
        }
    }

    @Test("association files and checkout settings come from the host's own merchant")
    func associationFiles() async throws {
        try await Self.with { server in
            let a = try await server.send("GET", "/.well-known/apple-developer-merchantid-domain-association")
            let b = try await server.send(
                "GET", "/.well-known/apple-developer-merchantid-domain-association", host: MoreMerchants.secondDomain)
            #expect(a.body == ServerHarness.associationFile)
            #expect(b.body == MoreMerchants.secondAssociation)
            let settings = try await server.send("GET", "/api/checkout", host: MoreMerchants.secondDomain)
            #expect(settings.json?["merchantIdentifier"] as? String == TestMaterial.secondMerchantIdentifier)
            let unknown = try await server.send("GET", "/.well-known/apple-developer-merchantid-domain-association", host: "nobody.example")
            #expect(unknown.status == 404)
        }
    }

    @Test("an order of merchant B is not found on A's domain, for updates and for payment, and stays open")
    func orders() async throws {
        try await Self.with { server in
            let (bOrder, bRequest) = try await order(server, host: MoreMerchants.secondDomain)
            for path in ["shipping-contact", "shipping-method", "coupon", "payment-method"] {
                let body = #"{"countryCode": "FR", "identifier": "standard", "couponCode": "TEN", "type": "debit"}"#
                let update = try await server.send("POST", "/api/orders/\(bOrder)/\(path)", body: Array(body.utf8))
                #expect(update.status == 404, "\(path)")
            }
            let token = try token(
                for: bRequest, to: MoreMerchants.secondProcessingKey.publicKey, merchant: TestMaterial.secondMerchantIdentifier)
            let onA = try await server.send(
                "POST", "/api/apple-pay/authorize", body: Array(#"{"orderId": "\#(bOrder)", "payment": {"token": \#(token)}}"#.utf8))
            #expect(onA.status == 404)
            #expect(try await server.store.order(id: bOrder)?.state == .open)

            // B's own domain pays it with B's key.
            let onB = try await server.send(
                "POST", "/api/apple-pay/authorize", host: MoreMerchants.secondDomain,
                body: Array(#"{"orderId": "\#(bOrder)", "payment": {"token": \#(token)}}"#.utf8))
            #expect(onB.status == 200)
        }
    }

    @Test("a token encrypted to merchant B's key is refused for merchant A's order")
    func foreignKey() async throws {
        try await Self.with { server in
            let (aOrder, aRequest) = try await order(server, host: ServerHarness.domain)
            let token = try token(
                for: aRequest, to: MoreMerchants.secondProcessingKey.publicKey, merchant: TestMaterial.secondMerchantIdentifier)
            let answer = try await server.send(
                "POST", "/api/apple-pay/authorize", body: Array(#"{"orderId": "\#(aOrder)", "payment": {"token": \#(token)}}"#.utf8))
            #expect(answer.status == 400)
            #expect(answer.errorCode == "invalid_token")
            #expect(try await server.store.order(id: aOrder)?.state == .open)
        }
    }

    @Test("two merchants cannot share a domain")
    func sharedDomain() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        var file = try ServerHarness.configurationFile(gatewayPort: 1, directory: directory)
        try MoreMerchants.addSecondMerchant(&file, directory)
        file.merchants[1].domains = [ServerHarness.domain.uppercased()]
        #expect {
            try ServerConfiguration.resolve(file, relativeTo: directory.url.path)
        } throws: { error in
            (error as? ConfigurationError)?.message.contains("already configured for \(TestMaterial.merchantIdentifier)") == true
        }
    }
}
