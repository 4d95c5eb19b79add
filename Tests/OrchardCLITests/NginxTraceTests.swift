import CurlClient
import Foundation
import OrchardConfiguration
import OrchardIntegrationTesting
import OrchardServerTesting
import OrchardTesting
import OrchardTracing
import Testing

/// A shopper's `traceparent` through real nginx running the shipped cluster configuration, in
/// front of a real `orchard serve` that trusts it (server.trustedProxies' loopback default): the
/// shipped file clears it, so Orchard's log and the processor see Orchard's own trace, unless the
/// operator uncomments the lines that pass it on.
@Suite("Trace context through the shipped nginx configuration", .serialized)
struct NginxTraceTests {
    /// A Luhn-valid test card number leads the trace ID: continued, it would be on every log line.
    static let cardShaped = "00-4111111111111111aaaaaaaaaaaaaaaa-00f067aa0ba902b7-01"

    /// What one payment through nginx with `traceparent` left: the trace the mock processor
    /// received, and the `trace_id` of the server's "payment authorized" log line.
    static func pay(sending traceparent: String, edit: @escaping (String) throws -> String = { $0 }) async throws -> (
        processor: TraceParent, logged: String?
    ) {
        let mock = try await CrashTests.mock()
        let server = try ServerProcess(processorURL: mock.baseURL, arguments: ["--log-level", "info"]) { file in
            file.log = .init(format: "json")
        }
        try await server.start()
        let nginx = try await NginxProcess(
            upstreamPorts: [server.port], domain: ServerHarness.domain, certificate: TestMaterial.shared.server, edit: edit)
        let client = try CurlHTTPClient()
        defer { client.shutdown() }
        func shopper(_ path: String, _ body: [UInt8]) async throws -> CurlResponse {
            try await client.execute(
                CurlRequest(
                    method: "POST", url: "https://127.0.0.1:\(nginx.httpsPort)\(path)",
                    headers: [
                        (name: "Host", value: ServerHarness.domain), (name: "Content-Type", value: "application/json"),
                        (name: "traceparent", value: traceparent), (name: "tracestate", value: "shopper=chosen"),
                    ], body: body, trust: .caPEM(TestMaterial.shared.caPEM)))
        }
        let created = try await shopper("/api/orders", Array(#"{"items": [{"productId": "apple", "quantity": 2}]}"#.utf8))
        #expect(created.status == 201)
        let orderId = try #require(created.json?["orderId"] as? String)
        let request = try #require(created.json?["paymentRequest"] as? [String: Any])
        let (body, _) = try AuthorizeBody.make(orderId, request, minter: server.minter)
        let paid = try await shopper("/api/apple-pay/authorize", body)
        #expect(paid.status == 200, "\(nginx.accessLog.suffix(500))")
        let charge = try #require(mock.received.last { $0.method == "POST" })
        let sent = try #require(charge.header("traceparent").flatMap(TraceParent.init))
        // Stopped, the server has written every line.
        await server.stop()
        await mock.stop()
        let line = jsonLogLines(server.output).first { $0["message"] as? String == "payment authorized" }
        return (sent, (line?["metadata"] as? [String: Any])?["trace_id"] as? String)
    }

    @Test("a shopper's card-shaped traceparent: the log line and the mock processor carry Orchard's own trace ID, the same")
    func cardShapedCleared() async throws {
        let caller = try #require(TraceParent(Self.cardShaped))
        let (sent, logged) = try await Self.pay(sending: Self.cardShaped)
        #expect(sent.traceID != caller.traceID)
        #expect(!TraceParent.looksLikeCardNumber(sent.headerValue))
        #expect(logged == "\(sent.traceID)", "the log line's trace is the one the processor got")
    }

    @Test("an ordinary traceparent is cleared too; uncommenting the shipped lines passes it on and Orchard continues it")
    func optIn() async throws {
        var generator = SystemRandomNumberGenerator()
        let caller = TraceParent(traceID: .random(using: &generator), spanID: .random(using: &generator), sampled: true)
        let cleared = try await Self.pay(sending: caller.headerValue)
        #expect(cleared.processor.traceID != caller.traceID)
        #expect(cleared.logged == "\(cleared.processor.traceID)")

        let passed = try await Self.pay(sending: caller.headerValue, edit: Self.passTraceHeaders)
        #expect(passed.processor.traceID == caller.traceID)
        #expect(passed.logged == "\(caller.traceID)")
    }

    @Test("the shop's snippet (orchard-locations.conf) clears both trace headers on the way to Orchard; uncommented, passes them")
    func locationsSnippet() async throws {
        // A stand-in for Orchard upstream, recording the trace headers that reach it.
        let upstream = MockWebhookReceiver(secret: String(repeating: "s", count: 40))
        try await upstream.start()
        defer { Task { await upstream.stop() } }
        let client = try CurlHTTPClient()
        defer { client.shutdown() }
        for optIn in [false, true] {
            let nginx = try await NginxProcess(
                upstreamPorts: [upstream.port], domain: ServerHarness.domain, certificate: TestMaterial.shared.server,
                shipped: .locations, edit: { optIn ? try Self.passTraceHeaders($0) : $0 })
            let answer = try await client.execute(
                CurlRequest(
                    method: "POST", url: "https://127.0.0.1:\(nginx.httpsPort)/orchard/api/orders",
                    headers: [
                        (name: "Host", value: ServerHarness.domain), (name: "traceparent", value: Self.cardShaped),
                        (name: "tracestate", value: "shopper=chosen"),
                    ], body: Array("{}".utf8), trust: .caPEM(TestMaterial.shared.caPEM)))
            #expect(answer.status == 200, "\(nginx.accessLog.suffix(500))")
            let trace = try #require(upstream.deliveries.last).trace
            #expect(trace == (optIn ? ["traceparent": Self.cardShaped, "tracestate": "shopper=chosen"] : [:]), "opt-in: \(optIn)")
        }
    }

    /// The operator's opt-in: the shipped file with its commented lines that pass the trace headers uncommented.
    static func passTraceHeaders(_ text: String) throws -> String {
        var text = text
        for line in ["proxy_set_header traceparent $http_traceparent;", "proxy_set_header tracestate $http_tracestate;"] {
            guard text.contains("# " + line) else {
                Issue.record("the shipped nginx configuration no longer offers \(line)")
                throw CancellationError()
            }
            text = text.replacingOccurrences(of: "# " + line, with: line)
        }
        return text
    }
}
