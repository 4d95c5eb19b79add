import AppleGateway
import ApplePay
import CurlClient
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Logging
import OrchardCore
import OrchardTesting
import Synchronization
import Testing

@Suite("Apple's Merchant Token Management API over mutual TLS, against the mock gateway")
struct MerchantTokenClientTests {
    static let merchant = TestMaterial.merchantIdentifier

    /// A started mock gateway and a client for it, both stopped after `body`.
    static func with(_ body: (GatewayFixture, AppleMerchantTokenClient) async throws -> Void) async throws {
        let fixture = try await GatewayFixture.start()
        let http = try CurlHTTPClient()
        let client = AppleMerchantTokenClient(
            http: http,
            endpoint: RemoteEndpoint(
                baseURL: fixture.baseURL, trust: .caPEM(fixture.material.caPEM), connectTimeout: .seconds(10), timeout: .seconds(15),
                isProductionHost: false),
            logger: Logger(label: "orchard.test.merchant-tokens"))
        do {
            try await body(fixture, client)
        } catch {
            http.shutdown()
            await fixture.gateway.stop()
            throw error
        }
        http.shutdown()
        await fixture.gateway.stop()
    }

    static func configuration(_ merchantIdentifier: String = merchant, identity: TestCertificate = TestMaterial.shared.identity) throws
        -> MerchantConfiguration
    {
        MerchantConfiguration(
            merchantIdentifier: merchantIdentifier, displayName: "Shop", domains: ["shop.example"],
            identity: try MerchantIdentity(
                certificatePEM: Array(try identity.certificatePEM.utf8), keyPEM: Array(try identity.keyPEM.utf8),
                certificateName: "identity.pem", keyName: "identity.key", at: Date()),
            identitySource: "identity.pem")
    }

    @Test("an event is fetched with Apple's headers and every field decoded")
    func fetch() async throws {
        try await Self.with { fixture, client in
            let metadata = DecryptedPayment.MerchantTokenMetadata(
                cardArt: [.init(name: "front", type: "image/png", url: "https://art.example/front.png")],
                cardMetadata: .init(
                    cardCountry: "FR", expirationDate: "20291231", fpanSuffix: "4242", shortDescription: "Visa",
                    longDescription: "Visa Gold"))
            let id = fixture.gateway.addTokenEvent(
                eventType: MerchantTokenEvent.updatedMetadata, merchantTokenIdentifier: "MTID.1_a-b", reason: "issuer", metadata: metadata)
            let event = try await client.event(id: id, for: try Self.configuration())
            #expect(
                event
                    == MerchantTokenEvent(
                        eventType: "UPDATED_METADATA", merchantTokenIdentifier: "MTID.1_a-b", reason: "issuer",
                        merchantTokenMetadata: metadata))
            #expect(fixture.gateway.tokenEventFetches == [id])
            let call = try #require(fixture.gateway.receivedMerchantTokenCalls.first)
            #expect(call.method == "GET")
            #expect(call.path == "/paymentservices/v1/merchantId/\(Self.merchant)/merchantToken/event/\(id)")
            #expect(call.contentType == "application/json")
            #expect(UUID(uuidString: call.requestId ?? "") != nil, "x-request-id: \(call.requestId ?? "none")")
            #expect(call.status == 200)
            // A fresh request ID on every call.
            _ = try await client.event(id: id, for: try Self.configuration())
            let ids = fixture.gateway.receivedMerchantTokenCalls.map(\.requestId)
            #expect(ids.count == 2 && ids[0] != ids[1])
        }
    }

    @Test("an event without metadata decodes with none")
    func withoutMetadata() async throws {
        try await Self.with { fixture, client in
            let id = fixture.gateway.addTokenEvent(eventType: MerchantTokenEvent.unlink, merchantTokenIdentifier: "tok-2")
            let event = try await client.event(id: id, for: try Self.configuration())
            #expect(event == MerchantTokenEvent(eventType: "UNLINK", merchantTokenIdentifier: "tok-2", reason: "user"))
        }
    }

    @Test("encrypted token metadata is read as sent; a shape that cannot be read keeps the event, with its fields absent")
    func encryptedMetadata() async throws {
        try await Self.with { fixture, client in
            let sent = EncryptedTokenMetadata(data: "ZGF0YQ==", ephemeralPublicKey: "a2V5", publicKeyHash: "aGFzaA==", signature: "c2ln")
            let id = fixture.gateway.addTokenEvent(
                eventType: MerchantTokenEvent.updatedMetadata, merchantTokenIdentifier: "tok-7", encryptedTokenMetadata: sent)
            let event = try await client.event(id: id, for: try Self.configuration())
            #expect(event.encryptedTokenMetadata == sent && event.merchantTokenMetadata == nil, "no card details: none to replace")

            let shapes: [(String, EncryptedTokenMetadata?)] = [
                (#""garbage""#, EncryptedTokenMetadata(data: nil, publicKeyHash: nil, signature: nil)),
                (
                    #"{"data": 7, "wrappedKey": "a2V5"}"#,
                    EncryptedTokenMetadata(data: nil, wrappedKey: "a2V5", publicKeyHash: nil, signature: nil)
                ),
                ("null", nil),
            ]
            for (shape, expected) in shapes {
                let raw = fixture.gateway.addRawTokenEvent(
                    Array(
                        #"{"eventType": "UNLINK", "merchantTokenIdentifier": "tok-8", "merchantTokenMetadata": {"encryptedTokenMetadata": \#(shape)}}"#
                            .utf8), merchantTokenIdentifier: "tok-8")
                let read = try await client.event(id: raw, for: try Self.configuration())
                #expect(read.eventType == "UNLINK" && read.merchantTokenIdentifier == "tok-8", "never hides an UNLINK: \(shape)")
                #expect(read.encryptedTokenMetadata == expected, "\(shape)")
            }
            let odd = fixture.gateway.addRawTokenEvent(
                Array(#"{"eventType": "UNLINK", "merchantTokenIdentifier": "tok-9", "merchantTokenMetadata": [1, 2]}"#.utf8),
                merchantTokenIdentifier: "tok-9")
            let read = try await client.event(id: odd, for: try Self.configuration())
            #expect(read.eventType == "UNLINK" && read.encryptedTokenMetadata == nil && read.merchantTokenMetadata == nil)
        }
    }

    @Test("an event Apple does not know is rejected with Apple's status and message")
    func unknownEvent() async throws {
        try await Self.with { fixture, client in
            let merchant = try Self.configuration()
            do throws(GatewayError) {
                _ = try await client.event(id: "no-such-event", for: merchant)
                Issue.record("an unknown event was fetched")
            } catch {
                #expect(error.kind == .rejected)
                #expect(error.appleStatus == 400)
                #expect(error.appleMessage?.contains("unknown eventId=no-such-event") == true, "\(error.appleMessage ?? "")")
                // The operator is told what Apple did not know: the event, not the merchant ID.
                #expect(error.hint.hasPrefix("Apple does not know this event for \(Self.merchant)"), "\(error.hint)")
            }
            #expect(fixture.gateway.tokenEventFetches == ["no-such-event"])
        }
    }

    @Test("unlink posts the identifier, the mock records it, and a second unlink is refused")
    func unlink() async throws {
        try await Self.with { fixture, client in
            _ = fixture.gateway.addTokenEvent(eventType: MerchantTokenEvent.updatedCardArt, merchantTokenIdentifier: "tok-1")
            try await client.unlink(merchantTokenIdentifier: "tok-1", for: try Self.configuration())
            #expect(fixture.gateway.unlinkedTokens == ["tok-1"])
            let call = try #require(fixture.gateway.receivedMerchantTokenCalls.first)
            #expect(call.method == "POST")
            #expect(call.path == "/paymentservices/v1/merchantId/\(Self.merchant)/merchantToken/unlink")
            #expect(call.contentType == "application/json")
            #expect(call.requestId?.isEmpty == false)
            #expect(call.status == 204)
            let body = try JSONSerialization.jsonObject(with: Data(call.body)) as? [String: String]
            #expect(body == ["merchantTokenIdentifier": "tok-1"])

            let merchant = try Self.configuration()
            for token in ["tok-1", "never-issued"] {
                do throws(GatewayError) {
                    try await client.unlink(merchantTokenIdentifier: token, for: merchant)
                    Issue.record("\(token) was unlinked")
                } catch {
                    #expect(error.kind == .rejected)
                    #expect(error.appleStatus == 400)
                    #expect(error.hint.hasPrefix("Apple does not know this merchant token"), "\(error.hint)")
                }
            }
            #expect(fixture.gateway.unlinkedTokens == ["tok-1"])
        }
    }

    @Test(
        "an event ID or token identifier that is not 1 to 64 of [A-Za-z0-9._-] is refused before any call",
        arguments: ["", String(repeating: "a", count: 65), "../unlink", "a/b", "a b", "a%2Fb", "é", "a?b", "a\u{0}"])
    func refusedIdentifiers(value: String) async throws {
        try await Self.with { fixture, client in
            let merchant = try Self.configuration()
            let requests = fixture.gateway.stats.requests
            do throws(GatewayError) {
                _ = try await client.event(id: value, for: merchant)
                Issue.record("event \(value.debugDescription) was asked for")
            } catch {
                #expect(error.kind == .invalidRequest)
            }
            do throws(GatewayError) {
                try await client.unlink(merchantTokenIdentifier: value, for: merchant)
                Issue.record("\(value.debugDescription) was unlinked")
            } catch {
                #expect(error.kind == .invalidRequest)
            }
            #expect(fixture.gateway.stats.requests == requests)
            #expect(fixture.gateway.receivedMerchantTokenCalls.isEmpty)
        }
    }

    @Test("64 characters of the allowed set pass")
    func longestIdentifier() async throws {
        let longest = String(repeating: "A", count: 60) + "9._-"
        #expect(MerchantTokenEvent.isValidIdentifier(longest))
        #expect(!MerchantTokenEvent.isValidIdentifier(longest + "x"))
    }

    @Test("a merchant ID with reserved characters goes as one percent-encoded path segment")
    func encodedMerchant() async throws {
        try await Self.with { fixture, client in
            let odd = "merchant.odd/id name"
            let identity = try fixture.material.pki.issueMerchantIdentity(merchantIdentifier: odd)
            let id = fixture.gateway.addTokenEvent(eventType: MerchantTokenEvent.updatedPublicKey, merchantTokenIdentifier: "tok-3")
            let event = try await client.event(id: id, for: try Self.configuration(odd, identity: identity))
            #expect(event.eventType == "UPDATED_MERCHANT_TOKEN_PUBLIC_KEY")
            #expect(
                fixture.gateway.receivedMerchantTokenCalls.first?.path
                    == "/paymentservices/v1/merchantId/merchant.odd%2Fid%20name/merchantToken/event/\(id)")
        }
    }

    @Test("the mock refuses a client without a certificate, and one with another merchant's")
    func mutualTLS() async throws {
        try await Self.with { fixture, client in
            let id = fixture.gateway.addTokenEvent(eventType: MerchantTokenEvent.unlink, merchantTokenIdentifier: "tok-4")
            let bare = try CurlHTTPClient()
            defer { bare.shutdown() }
            await #expect(throws: CurlError.self) {
                _ = try await bare.execute(
                    CurlRequest(
                        url: fixture.baseURL + "/paymentservices/v1/merchantId/\(Self.merchant)/merchantToken/event/\(id)",
                        headers: [(name: "Content-Type", value: "application/json"), (name: "x-request-id", value: "r1")],
                        trust: .caPEM(fixture.material.caPEM)))
            }
            #expect(fixture.gateway.stats.requests == 0)
            let impostor = try Self.configuration(identity: TestMaterial.secondIdentity)
            do throws(GatewayError) {
                _ = try await client.event(id: id, for: impostor)
                Issue.record("another merchant's certificate was accepted")
            } catch {
                #expect(error.kind == .rejected)
                #expect(error.appleStatus == 417)
                #expect(error.hint.contains("identity certificate belongs to another merchant ID"), "\(error.hint)")
            }
            #expect(fixture.gateway.tokenEventFetches.isEmpty)
        }
    }

    @Test("the mock requires x-request-id and a JSON Content-Type, even on a GET")
    func requiredHeaders() async throws {
        try await Self.with { fixture, _ in
            let id = fixture.gateway.addTokenEvent(eventType: MerchantTokenEvent.unlink, merchantTokenIdentifier: "tok-5")
            let http = try CurlHTTPClient()
            defer { http.shutdown() }
            let identity = fixture.material.identity
            for headers in [[(name: "Content-Type", value: "application/json")], [(name: "x-request-id", value: "r1")]] {
                let response = try await http.execute(
                    CurlRequest(
                        url: fixture.baseURL + "/paymentservices/v1/merchantId/\(Self.merchant)/merchantToken/event/\(id)",
                        headers: headers,
                        identity: .pem(certificate: Array(try identity.certificatePEM.utf8), key: Array(try identity.keyPEM.utf8)),
                        trust: .caPEM(fixture.material.caPEM)))
                #expect(response.status == 400)
            }
        }
    }

    @Test("Apple failing is .rejected with its status, and unlinks nothing")
    func appleDown() async throws {
        try await Self.with { fixture, client in
            _ = fixture.gateway.addTokenEvent(eventType: MerchantTokenEvent.updatedMetadata, merchantTokenIdentifier: "tok-6")
            fixture.gateway.merchantTokenFaultStatus = 500
            let merchant = try Self.configuration()
            do throws(GatewayError) {
                try await client.unlink(merchantTokenIdentifier: "tok-6", for: merchant)
                Issue.record("unlinked during a fault")
            } catch {
                #expect(error.kind == .rejected)
                #expect(error.appleStatus == 500)
                #expect(error.hint.hasPrefix("Apple refused the request (HTTP 500"), "\(error.hint)")
            }
            #expect(fixture.gateway.unlinkedTokens.isEmpty)
            fixture.gateway.merchantTokenFaultStatus = nil
            try await client.unlink(merchantTokenIdentifier: "tok-6", for: merchant)
            #expect(fixture.gateway.unlinkedTokens == ["tok-6"])
        }
    }

    // MARK: Notifications

    /// What a notification receiver saw: one line per request.
    final class Seen: Sendable {
        let lines = Mutex<[String]>([])
        var all: [String] { lines.withLock { $0 } }
    }

    /// A loopback HTTP server answering `status` to every GET and recording what it saw.
    static func withReceiver(status: HTTPResponse.Status, _ body: @escaping @Sendable (Int, Seen) async throws -> Void) async throws {
        let seen = Seen()
        let router = Router()
        router.get("**") { request, _ -> Response in
            let length = request.headers[.contentLength] ?? "none"
            let chunked = request.headers[.transferEncoding] != nil
            seen.lines.withLock { $0.append("\(request.method) \(request.uri.description) length=\(length) chunked=\(chunked)") }
            return Response(status: status)
        }
        let app = Application(router: router, logger: Logger(label: "orchard.test.notification-receiver"))
        try await app.test(.live) { client in
            try await body(try #require(client.port), seen)
        }
    }

    @Test("notify sends Apple's GET to {url}/notification/merchantToken/{eventId}, once when answered 200")
    func notify() async throws {
        try await Self.withReceiver(status: .ok) { port, seen in
            let gateway = try await GatewayFixture.start()
            defer { Task { await gateway.gateway.stop() } }
            let id = gateway.gateway.addTokenEvent(eventType: MerchantTokenEvent.unlink, merchantTokenIdentifier: "tok-7")
            let status = try await gateway.gateway.notify(tokenNotificationURL: "http://localhost:\(port)/apple/tokens/", eventId: id)
            #expect(status == 200)
            #expect(seen.all == ["GET /apple/tokens/notification/merchantToken/\(id) length=none chunked=false"])
            #expect(gateway.gateway.tokenNotifications.map(\.status) == [200])
        }
    }

    @Test("notify tries 3 more times when not answered 200, as Apple does")
    func notifyRetries() async throws {
        try await Self.withReceiver(status: .internalServerError) { port, seen in
            let gateway = try await GatewayFixture.start()
            defer { Task { await gateway.gateway.stop() } }
            let status = try await gateway.gateway.notify(tokenNotificationURL: "http://localhost:\(port)", eventId: "evt-1")
            #expect(status == 500)
            #expect(seen.all.count == 4)
            #expect(seen.all.first == "GET /notification/merchantToken/evt-1 length=none chunked=false")
        }
    }

    @Test("notify reaches an https server with a certificate from the test CA")
    func notifyHTTPS() async throws {
        let host = try MockDomainHost(serverIdentity: TestMaterial.shared.server, pages: [:])
        let port = try await host.start()
        defer { Task { await host.stop() } }
        let gateway = try await GatewayFixture.start()
        defer { Task { await gateway.gateway.stop() } }
        // The host answers 404 to anything but the association file: an HTTP status proves TLS held.
        let status = try await gateway.gateway.notify(tokenNotificationURL: "https://127.0.0.1:\(port)", eventId: "evt-2")
        #expect(status == 404)
        #expect(gateway.gateway.tokenNotifications.count == 4)
    }
}
