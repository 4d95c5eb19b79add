import CurlClient
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Logging
import OrchardTesting
import Synchronization
import Testing

@Suite("The mock gateway's POST /_mock/token-events: a test in another process makes it notify a loopback server")
struct MockGatewayControlTests {
    static let merchant = TestMaterial.merchantIdentifier

    /// What the notification receiver saw: one line per request, and the event it fetched back.
    final class Seen: Sendable {
        let lines = Mutex<[String]>([])
        let events = Mutex<[[String: String]]>([])
        var all: [String] { lines.withLock { $0 } }
        var fetched: [[String: String]] { events.withLock { $0 } }
    }

    /// A started mock gateway, a curl client, and a loopback receiver answering `status` to every GET;
    /// with `fetchBack`, the receiver first fetches the notified event from the gateway, as Orchard does.
    static func with(
        receiverStatus status: HTTPResponse.Status = .ok, fetchBack: Bool = false,
        _ body: @escaping @Sendable (GatewayFixture, CurlHTTPClient, Int, Seen) async throws -> Void
    ) async throws {
        let fixture = try await GatewayFixture.start()
        let http = try CurlHTTPClient()
        let seen = Seen()
        let router = Router()
        router.get("**") { request, _ -> Response in
            seen.lines.withLock { $0.append("\(request.method) \(request.uri.description)") }
            if fetchBack, let eventId = request.uri.path.split(separator: "/").last {
                let response = try await http.execute(
                    Self.identified(
                        fixture,
                        url: fixture.baseURL + "/paymentservices/v1/merchantId/\(Self.merchant)/merchantToken/event/\(eventId)",
                        headers: [(name: "Content-Type", value: "application/json"), (name: "x-request-id", value: "control-test")]))
                let event = try JSONSerialization.jsonObject(with: Data(response.body)) as? [String: String]
                seen.events.withLock { $0.append(event ?? [:]) }
            }
            return Response(status: status)
        }
        let app = Application(router: router, logger: Logger(label: "orchard.test.control-receiver"))
        do {
            try await app.test(.live) { client in
                try await body(fixture, http, try #require(client.port), seen)
            }
        } catch {
            http.shutdown()
            await fixture.gateway.stop()
            throw error
        }
        http.shutdown()
        await fixture.gateway.stop()
    }

    /// A request carrying the shared merchant identity, trusting the test CA.
    static func identified(
        _ fixture: GatewayFixture, method: String = "GET", url: String, headers: [(name: String, value: String)] = [],
        body: [UInt8]? = nil
    ) throws -> CurlRequest {
        let identity = fixture.material.identity
        return CurlRequest(
            method: method, url: url, headers: headers, body: body,
            identity: .pem(certificate: Array(try identity.certificatePEM.utf8), key: Array(try identity.keyPEM.utf8)),
            trust: .caPEM(fixture.material.caPEM))
    }

    /// POSTs `object` (or `raw`) to the control route with the merchant identity.
    static func post(
        _ fixture: GatewayFixture, _ http: CurlHTTPClient, _ object: [String: String]? = nil, raw: [UInt8]? = nil
    ) async throws -> (status: Int, body: [String: Any]) {
        let bytes = try raw ?? Array(JSONSerialization.data(withJSONObject: object ?? [:]))
        var request = try identified(
            fixture, method: "POST", url: fixture.baseURL + "/_mock/token-events",
            headers: [(name: "Content-Type", value: "application/json")], body: bytes)
        // The answer waits for up to four notification attempts; one core running the whole
        // suite was seen to take over 10 s (the client's default) for them.
        request.timeouts = CurlTimeouts(connect: .seconds(10), total: CurlTimeouts.maximumTotal)
        let response = try await http.execute(request)
        let body = (try? JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any]) ?? [:]
        return (response.status, body)
    }

    @Test("it makes the event, sends exactly Apple's GET for it, and answers its ID and the status the notification got")
    func notifies() async throws {
        try await Self.with(fetchBack: true) { fixture, http, port, seen in
            let answer = try await Self.post(
                fixture, http,
                [
                    "eventType": "UNLINK", "merchantTokenIdentifier": "tok-control-1", "reason": "issuer",
                    "tokenNotificationURL": "http://127.0.0.1:\(port)/apple/tokens/",
                ])
            #expect(answer.status == 200, "\(answer.body)")
            let eventId = try #require(answer.body["eventId"] as? String)
            #expect(answer.body["status"] as? Int == 200)
            #expect(seen.all == ["GET /apple/tokens/notification/merchantToken/\(eventId)"])
            // The receiver fetched the event back from the gateway while the notification was still open.
            #expect(seen.fetched == [["eventType": "UNLINK", "merchantTokenIdentifier": "tok-control-1", "reason": "issuer"]])
            #expect(fixture.gateway.tokenEventFetches == [eventId])
            #expect(fixture.gateway.tokenNotifications.map(\.status) == [200])
        }
    }

    @Test("reason defaults to user, localhost is loopback, and a failing receiver's status is passed on after Apple's retries")
    func failingReceiver() async throws {
        try await Self.with(receiverStatus: .internalServerError) { fixture, http, port, seen in
            let answer = try await Self.post(
                fixture, http,
                ["eventType": "UPDATED_METADATA", "merchantTokenIdentifier": "tok-2", "tokenNotificationURL": "http://localhost:\(port)"])
            #expect(answer.status == 200, "\(answer.body)")
            let eventId = try #require(answer.body["eventId"] as? String)
            #expect(answer.body["status"] as? Int == 500)
            #expect(seen.all == Array(repeating: "GET /notification/merchantToken/\(eventId)", count: 4))
        }
    }

    @Test("a receiver that is not there is 502 with the event ID")
    func noReceiver() async throws {
        try await Self.with { fixture, http, _, _ in
            let closed = try #require(LoopbackPort.free())
            let answer = try await Self.post(
                fixture, http,
                ["eventType": "UNLINK", "merchantTokenIdentifier": "tok-3", "tokenNotificationURL": "http://127.0.0.1:\(closed)"])
            #expect(answer.status == 502, "\(answer.body)")
            #expect(answer.body["eventId"] is String)
            #expect(fixture.gateway.tokenNotifications.map(\.status) == [nil, nil, nil, nil])
        }
    }

    @Test("a URL that is not http(s) on loopback, or a bad body, is 400 and nothing is sent")
    func refused() async throws {
        try await Self.with { fixture, http, port, seen in
            let urls = [
                "https://example.com/x", "http://10.0.0.1:\(port)", "ftp://127.0.0.1:\(port)/x", "http://127.0.0.1@example.com/",
                "http://example.com#@127.0.0.1", "http://user@127.0.0.1:\(port)/", "http://127.0.0.1:\(port)/x?q=1",
                "http://127.0.0.1:\(port)/x#f", "http://127.0.0.1.example.com:\(port)", "file:///etc/passwd", "not a url", "",
            ]
            for url in urls {
                let answer = try await Self.post(
                    fixture, http, ["eventType": "UNLINK", "merchantTokenIdentifier": "tok-4", "tokenNotificationURL": url])
                #expect(answer.status == 400, "\(url): \(answer.body)")
                #expect(answer.body["error"] is String)
            }
            let good = "http://127.0.0.1:\(port)"
            let bodies: [[UInt8]] = [
                Array("not json".utf8), Array("[]".utf8), [],
                Array(#"{"merchantTokenIdentifier":"t","tokenNotificationURL":"\#(good)"}"#.utf8),
                Array(#"{"eventType":"UNLINK","tokenNotificationURL":"\#(good)"}"#.utf8),
                Array(#"{"eventType":"UNLINK","merchantTokenIdentifier":"t"}"#.utf8),
                Array(#"{"eventType":"UNLINK","merchantTokenIdentifier":"t","reason":7,"tokenNotificationURL":"\#(good)"}"#.utf8),
                Array(#"{"eventType":1,"merchantTokenIdentifier":"t","tokenNotificationURL":"\#(good)"}"#.utf8),
            ]
            for body in bodies {
                let answer = try await Self.post(fixture, http, raw: body)
                #expect(answer.status == 400, "\(String(decoding: body, as: UTF8.self)): \(answer.body)")
            }
            #expect(seen.all.isEmpty)
            #expect(fixture.gateway.tokenNotifications.isEmpty)
        }
    }

    @Test("a client without a certificate from the test CA is refused, and nothing is sent")
    func mutualTLS() async throws {
        try await Self.with { fixture, http, port, seen in
            let body = try JSONSerialization.data(withJSONObject: [
                "eventType": "UNLINK", "merchantTokenIdentifier": "tok-5", "tokenNotificationURL": "http://127.0.0.1:\(port)",
            ])
            await #expect(throws: CurlError.self) {
                _ = try await http.execute(
                    CurlRequest(
                        method: "POST", url: fixture.baseURL + "/_mock/token-events",
                        headers: [(name: "Content-Type", value: "application/json")], body: Array(body),
                        trust: .caPEM(fixture.material.caPEM)))
            }
            #expect(fixture.gateway.stats.requests == 0)
            #expect(seen.all.isEmpty)
            #expect(fixture.gateway.tokenNotifications.isEmpty)
        }
    }
}
