import ApplePay
import Crypto
import Foundation
import OrchardConfiguration
import OrchardCore
import OrchardIntegrationTesting
import OrchardServerTesting
import OrchardServices
import OrchardTesting
import Synchronization
import Testing

/// Card updates in Apple's token events (issue 48), over real sockets: the mock gateway serves an
/// `UPDATED_METADATA` event whose `encryptedTokenMetadata` is minted with the test chain for the
/// merchant's processing key, Apple's notification reaches the server, which fetches the event
/// over mutual TLS and records what it opens.
@Suite("Card updates: Apple's encrypted token metadata reaches GET /v1/mandates/{id} and mandate.updated")
struct CardUpdateTests {
    /// The payments API harness, live, with a webhook receiver and the server's logs captured.
    static func with(
        receiver: MockWebhookReceiver, logs: CapturingLogHandler, _ body: (ServerHarness) async throws -> Void
    ) async throws {
        try await ServerHarness.with(
            otherMockMerchants: MoreMerchants.mockMerchants, environment: ["SHOP_WEBHOOK_SECRET": PaymentsAPITests.webhookSecret],
            logHandler: logs, callsShops: true, transport: .live,
            configure: { file, directory in
                try MoreMerchants.addSecondMerchant(&file, directory)
                file.webhooks = .init(firstRetrySeconds: 1, maximumRetrySeconds: 2, pollIntervalMilliseconds: 100)
                file.merchants[0].webhook = .init(url: receiver.url, secret: "env:SHOP_WEBHOOK_SECRET")
            }, body)
    }

    /// Apple's metadata for the merchant's processing key: an MPAN ending 1234 expiring in December 2030.
    static func metadata(tamper: Bool = false) throws -> EncryptedTokenMetadata {
        var metadata = try TokenMinter(chain: ServerHarness.tokenChain).mintTokenMetadata(
            payload: TokenMinter.tokenMetadataPayload(expirationDate: "301231", mpan: "5204240750191234", mpanId: "MPAN-7.x"),
            to: ServerHarness.processingKey.publicKey,
            merchantIdentifier: TestMaterial.merchantIdentifier)
        if tamper, var bytes = metadata.data.flatMap({ Data(base64Encoded: $0) }).map(Array.init) {
            bytes[bytes.count / 2] ^= 0x01
            metadata.data = Data(bytes).base64EncodedString()
        }
        return metadata
    }

    /// Pays a recurring first payment with `token`, then has Apple notify an update event carrying `metadata`.
    static func notifyUpdate(_ server: ServerHarness, key: String, token: String, metadata: EncryptedTokenMetadata) async throws -> (
        mandateId: String, eventId: String
    ) {
        let (_, payment) = try await RecurringPayment.pay(server, key: key, token: token)
        let mandateId = try #require(payment["mandateId"] as? String)
        let eventId = server.gateway.addTokenEvent(
            eventType: "UPDATED_METADATA", merchantTokenIdentifier: token, encryptedTokenMetadata: metadata)
        let base = "http://127.0.0.1:\(server.port)/apple-pay/token-events/\(TestMaterial.merchantIdentifier)"
        #expect(try await server.gateway.notify(tokenNotificationURL: base, eventId: eventId) == 200)
        return (mandateId, eventId)
    }

    @Test("metadata Apple signed: the mandate shows the MPAN's new expiry and last four digits, and mandate.updated carries them")
    func recorded() async throws {
        let receiver = MockWebhookReceiver(secret: PaymentsAPITests.webhookSecret)
        try await receiver.start()
        defer { Task { await receiver.stop() } }
        let logs = CapturingLogHandler()
        try await Self.with(receiver: receiver, logs: logs) { server in
            let key = try await server.apiKey()
            let (mandateId, _) = try await Self.notifyUpdate(
                server, key: key, token: "DNITHE000000000000000481", metadata: try Self.metadata())
            let shown = try await Eventually.until {
                let mandate = try await server.api("GET", "/v1/mandates/\(mandateId)", key: key).json
                return (mandate?["merchantToken"] as? [String: Any])?["expirationDate"] as? String == "301231"
            }
            #expect(shown, "GET /v1/mandates/{id} shows the new expiry")
            let mandate = try #require(try await server.api("GET", "/v1/mandates/\(mandateId)", key: key).json)
            let details = try #require(mandate["merchantToken"] as? [String: Any])
            #expect(details["expirationMonth"] as? Int == 12 && details["expirationYear"] as? Int == 2030)
            #expect(details["suffix"] as? String == "1234" && details["mpanId"] as? String == "MPAN-7.x")
            #expect(mandate["lastFour"] as? String == "7840", "the first payment's last four stay")

            let seen = try await receiver.wait { $0.contains { $0.type == "mandate.updated" } }
            let update = try #require(seen.first { $0.type == "mandate.updated" })
            #expect(update.verified)
            let data = try #require(update.json?["data"] as? [String: Any])
            let webhookDetails = try #require((data["mandate"] as? [String: Any])?["merchantToken"] as? [String: Any])
            #expect(webhookDetails["expirationDate"] as? String == "301231" && webhookDetails["suffix"] as? String == "1234")
            let logged = logs.records.withLock { $0 }.map { "\($0.message) \($0.metadata)" }.joined(separator: "\n")
            #expect(!logged.contains("52042407501"), "never the MPAN")
            #expect(logs.warnings(containing: "does not verify").isEmpty)
        }
    }

    @Test("metadata that does not verify: the mandate is unchanged, no mandate.updated, one warning; the event is applied")
    func tampered() async throws {
        let receiver = MockWebhookReceiver(secret: PaymentsAPITests.webhookSecret)
        try await receiver.start()
        defer { Task { await receiver.stop() } }
        let logs = CapturingLogHandler()
        try await Self.with(receiver: receiver, logs: logs) { server in
            let key = try await server.apiKey()
            let token = "DNITHE000000000000000482"
            let before = try await server.store.webhookEvents(merchantIdentifier: nil, state: nil, limit: 50).count
            let (mandateId, eventId) = try await Self.notifyUpdate(
                server, key: key, token: token, metadata: try Self.metadata(tamper: true))
            let original = try #require(try await server.store.mandate(id: mandateId))
            let applied = try await Eventually.until {
                try await server.store.tokenEvent(merchantIdentifier: TestMaterial.merchantIdentifier, eventId: eventId)?.state == .applied
            }
            #expect(applied, "applied, so not fetched again")
            #expect(try await server.store.mandate(id: mandateId) == original, "nothing changed")
            let mandate = try #require(try await server.api("GET", "/v1/mandates/\(mandateId)", key: key).json)
            #expect(mandate["merchantToken"] == nil)
            let types = try await server.store.webhookEvents(merchantIdentifier: nil, state: nil, limit: 50).map(\.type)
            #expect(types.count == before + 2 && !types.contains(.mandateUpdated), "the first payment's two events, nothing after")
            let warnings = logs.warnings(containing: "does not verify or open")
            #expect(warnings.count == 1)
            #expect(warnings.first?.metadata["reason"] == "messageDigestMismatch")
            #expect(server.gateway.tokenEventFetches == [eventId], "fetched once")
        }
    }
}
