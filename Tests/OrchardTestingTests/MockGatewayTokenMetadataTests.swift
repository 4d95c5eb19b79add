import ApplePay
import CurlClient
import Foundation
import OrchardTesting
import Testing

/// `POST /_mock/token-events` with `tokenMetadata`: the mock encrypts it to the demo merchant's
/// processing key, signs it with the test chain, and serves it in the event as
/// `merchantTokenMetadata.encryptedTokenMetadata`, as `orchard-sandbox demo` sets it up.
@Suite("The mock gateway mints card updates into token events")
struct MockGatewayTokenMetadataTests {
    /// What a merchant holding the demo's processing keys opens the event's metadata to.
    static func open(_ metadata: EncryptedTokenMetadata, _ environment: DemoEnvironment) throws -> TokenMetadata {
        let keys = try [environment.ecProcessingKeyFile, environment.rsaProcessingKeyFile].map {
            try ProcessingKey(
                privateKeyPEM: String(contentsOfFile: $0, encoding: .utf8), merchantIdentifier: DemoEnvironment.merchantIdentifier)
        }
        let verifier = TokenVerifier(root: try environment.tokenChain().root.certificate).withPolicy(.tokenMetadata)
        return try metadata.open(verifier: verifier, decryptor: TokenDecryptor(keys: keys), at: Date())
    }

    /// The event the gateway serves under `eventId`, read as Orchard reads Apple's.
    static func fetched(_ fixture: GatewayFixture, _ http: CurlHTTPClient, _ eventId: String) async throws -> EncryptedTokenMetadata? {
        struct Event: Decodable {
            struct Metadata: Decodable { var encryptedTokenMetadata: EncryptedTokenMetadata? }
            var eventType: String
            var merchantTokenMetadata: Metadata?
        }
        let response = try await http.execute(
            MockGatewayControlTests.identified(
                fixture,
                url: fixture.baseURL + "/paymentservices/v1/merchantId/\(MockGatewayControlTests.merchant)/merchantToken/event/\(eventId)",
                headers: [(name: "Content-Type", value: "application/json"), (name: "x-request-id", value: "metadata-test")]))
        #expect(response.status == 200)
        return try JSONDecoder().decode(Event.self, from: Data(response.body)).merchantTokenMetadata?.encryptedTokenMetadata
    }

    static func body(_ port: Int, _ extra: String) -> [UInt8] {
        Array(
            #"{"eventType": "UPDATED_METADATA", "merchantTokenIdentifier": "tok-48", "tokenNotificationURL": "http://127.0.0.1:\#(port)"\#(extra)}"#
                .utf8)
    }

    /// One test, so that the demo's RSA key is made once: minted EC_v1 and RSA_v1 metadata,
    /// tampered metadata, then the refusals.
    @Test("EC_v1 by default and RSA_v1 on request open with the demo merchant's keys; a tampered one does not; bad fields are 400")
    func minted() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let environment = try DemoEnvironment.prepare(directory: directory.url.path)
        try await MockGatewayControlTests.with { fixture, http, port, seen in
            let valid = #", "tokenMetadata": {"expirationDate": "301231", "mpan": "5204240750197840", "mpanId": "m-1"}"#
            let noKey = try await MockGatewayControlTests.post(fixture, http, raw: Self.body(port, valid))
            #expect(noKey.status == 400 && (noKey.body["error"] as? String)?.contains("processing key") == true, "\(noKey.body)")
            #expect(seen.all.isEmpty && fixture.gateway.tokenNotifications.isEmpty, "nothing made or sent")

            fixture.gateway.tokenMetadataMinting = try environment.tokenMetadataMinting()
            for scheme in ["", #", "tokenMetadataScheme": "RSA_v1""#] {
                let answer = try await MockGatewayControlTests.post(fixture, http, raw: Self.body(port, valid + scheme))
                #expect(answer.status == 200, "\(answer.body)")
                let eventId = try #require(answer.body["eventId"] as? String)
                let metadata = try #require(try await Self.fetched(fixture, http, eventId))
                #expect((metadata.wrappedKey != nil) == !scheme.isEmpty && (metadata.ephemeralPublicKey != nil) == scheme.isEmpty)
                let opened = try Self.open(metadata, environment)
                #expect(opened.expirationDate == "301231" && opened.mpanSuffix == "7840" && opened.mpanId == "m-1")
            }

            let tampered = try await MockGatewayControlTests.post(
                fixture, http, raw: Self.body(port, valid + #", "tokenMetadataTamper": true"#))
            #expect(tampered.status == 200, "\(tampered.body)")
            let tamperedId = try #require(tampered.body["eventId"] as? String)
            let metadata = try #require(try await Self.fetched(fixture, http, tamperedId))
            #expect(throws: ApplePayError.self) { _ = try Self.open(metadata, environment) }

            let sent = fixture.gateway.tokenNotifications.count
            var withoutRSA = try environment.tokenMetadataMinting()
            withoutRSA.rsaKey = nil
            fixture.gateway.tokenMetadataMinting = withoutRSA
            for extra in [
                #", "tokenMetadata": "301231""#, #", "tokenMetadata": {"expirationDate": "301231"}"#,
                #", "tokenMetadata": {"expirationDate": 301231, "mpan": "5204240750197840"}"#,
                valid + #", "tokenMetadataScheme": "EC_v2""#, valid + #", "tokenMetadataTamper": "yes""#,
                #", "tokenMetadataTamper": true"#, valid + #", "tokenMetadataScheme": "RSA_v1""#,
            ] {
                let answer = try await MockGatewayControlTests.post(fixture, http, raw: Self.body(port, extra))
                #expect(answer.status == 400, "\(extra): \(answer.body)")
                #expect(answer.body["error"] is String)
            }
            #expect(fixture.gateway.tokenNotifications.count == sent, "nothing sent for a refused body")
        }
    }
}
