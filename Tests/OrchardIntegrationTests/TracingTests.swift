import CurlClient
import Foundation
import HTTPTypes
import Instrumentation
import Logging
import OrchardCore
import OrchardIntegrationTesting
import OrchardRuntime
import OrchardServerTesting
import OrchardTesting
import OrchardTracing
import Synchronization
import Testing
import Tracing

@testable import OrchardConfiguration
@testable import OrchardServer
@testable import OrchardServices

/// The process's tracer for these tests: Orchard's own, as `orchard serve` starts it, recording
/// each span that ends. Bootstrapped once for the whole test process (the tracer is global).
enum TestTracing {
    static let ended = Mutex<[FinishedSpan]>([])
    private static let installed: Bool = {
        InstrumentationSystem.bootstrap(
            W3CTracer { span in
                ended.withLock { spans in
                    if spans.count >= 10_000 { spans.removeFirst(5_000) }
                    spans.append(span)
                }
            })
        return true
    }()

    static func install() { _ = installed }

    static func spans(in trace: TraceParent.TraceID) -> [FinishedSpan] {
        ended.withLock { $0.filter { $0.traceParent.traceID == trace } }
    }
}

/// JSON log lines, as `orchard serve --log-format json` writes them, kept in memory.
final class JSONLines: Sendable {
    private let lines = Mutex<[[UInt8]]>([])

    var handler: JSONLogHandler {
        var handler = JSONLogHandler(label: "orchard.test", metadataProvider: .traceContext) { [self] line in
            self.lines.withLock { $0.append(line) }
        }
        handler.logLevel = .info
        return handler
    }

    func metadata(ofFirst message: String) -> [String: Any]? {
        for line in lines.withLock({ $0 }) {
            guard let object = try? JSONSerialization.jsonObject(with: Data(line)) as? [String: Any] else { continue }
            if object["message"] as? String == message { return object["metadata"] as? [String: Any] }
        }
        return nil
    }
}

@Suite("Traces: W3C traceparent in, on to the processor, and in the log lines")
struct TracingTests {
    init() { TestTracing.install() }

    static func traceparent() -> TraceParent {
        var generator = SystemRandomNumberGenerator()
        return TraceParent(traceID: .random(using: &generator), spanID: .random(using: &generator), sampled: true)
    }

    /// Pays an order with `caller` as the request's traceparent; the traceparent the mock processor got.
    static func pay(_ fixture: ProcessorFixture, sending caller: TraceParent) async throws -> TraceParent {
        let (id, request) = try await fixture.order()
        let (body, _) = try AuthorizeBody.make(id, request, minter: fixture.minter, at: fixture.clock.now)
        let response = try await fixture.server.send(
            "POST", "/api/apple-pay/authorize", body: body, extraHeaders: [("traceparent", caller.headerValue)])
        #expect(response.status == 200)
        let charge = try #require(fixture.mock.received.last { $0.method == "POST" })
        return try #require(charge.header("traceparent").flatMap(TraceParent.init))
    }

    @Test("a traceparent from a trusted proxy: the mock processor and the log line see its trace ID; the spans nest")
    func continued() async throws {
        let caller = Self.traceparent()
        let logs = JSONLines()
        try await ProcessorFixture.with(.worldpay, logHandler: logs.handler) { fixture in
            let sent = try await Self.pay(fixture, sending: caller)
            #expect(sent.traceID == caller.traceID)
            #expect(sent.spanID != caller.spanID)
            let logged = try #require(logs.metadata(ofFirst: "payment authorized"))
            #expect(logged["trace_id"] as? String == "\(caller.traceID)")
            let spans = TestTracing.spans(in: caller.traceID)
            let server = try #require(spans.first { $0.kind == .server })
            #expect(server.parentSpanID == caller.spanID)
            #expect(server.operationName == "POST /api/apple-pay/authorize")
            #expect(server.attributes.get("http.response.status_code") == .int64(200))
            let call = try #require(spans.first { $0.traceParent.spanID == sent.spanID })
            #expect(call.kind == .client)
            #expect(call.parentSpanID == server.traceParent.spanID)
            #expect(call.attributes.get("server.address") == .string("127.0.0.1"))
            #expect(logged["span_id"] as? String == "\(call.parentSpanID.map { "\($0)" } ?? "")")
        }
    }

    @Test("a route's own log line carries its span, and no hb.request.id (a hex counter that can read as a card number)")
    func routeLogLine() async throws {
        let caller = Self.traceparent()
        let logs = JSONLines()
        try await ProcessorFixture.with(.worldpay, logHandler: logs.handler) { fixture in
            let response = try await fixture.server.send(
                "GET", "/v1/payment-requests/unknown", host: "api.internal", extraHeaders: [("traceparent", caller.headerValue)])
            #expect(response.status == 401)
        }
        let logged = try #require(logs.metadata(ofFirst: "payments API request refused: no valid API key"))
        #expect(logged["trace_id"] as? String == "\(caller.traceID)")
        #expect(logged["span_id"] != nil)
        #expect(logged["hb.request.id"] == nil)
    }

    @Test("a card-shaped trace ID from a trusted proxy is replaced: the log line and the processor get Orchard's own, a new trace")
    func cardShaped() async throws {
        // 4111111111111111 is a Luhn-valid test card number; continued, it would be on every log line.
        let caller = try #require(TraceParent("00-4111111111111111aaaaaaaaaaaaaaaa-00f067aa0ba902b7-01"))
        let logs = JSONLines()
        try await ProcessorFixture.with(.worldpay, logHandler: logs.handler) { fixture in
            let sent = try await Self.pay(fixture, sending: caller)
            #expect(sent.traceID != caller.traceID)
            #expect(!TraceParent.looksLikeCardNumber(sent.headerValue))
            let logged = try #require(logs.metadata(ofFirst: "payment authorized"))
            #expect(logged["trace_id"] as? String == "\(sent.traceID)")
            #expect(TestTracing.spans(in: caller.traceID).isEmpty)
            let server = try #require(TestTracing.spans(in: sent.traceID).first { $0.kind == .server })
            #expect(server.parentSpanID == nil, "a new trace, not a child of the caller's span")
        }
    }

    @Test("server.acceptTraceparent nobody: the request starts a trace of its own, which the processor still gets")
    func refused() async throws {
        let caller = Self.traceparent()
        try await ProcessorFixture.with(
            .worldpay, configure: { file, _ in file.server?.acceptTraceparent = "nobody" }
        ) { fixture in
            let sent = try await Self.pay(fixture, sending: caller)
            #expect(sent.traceID != caller.traceID)
            #expect(TestTracing.spans(in: caller.traceID).isEmpty)
        }
    }

    @Test("whose traceparent is accepted", arguments: TraceparentTrust.allCases)
    func trust(_ accept: TraceparentTrust) throws {
        let proxies = [try #require(IPNetwork("10.0.0.0/8"))]
        #expect(accept.accepts(IPAddress("10.1.2.3"), trustedProxies: proxies) == (accept != .nobody))
        #expect(accept.accepts(IPAddress("192.0.2.7"), trustedProxies: proxies) == (accept == .anyone))
        #expect(accept.accepts(nil, trustedProxies: proxies) == (accept == .anyone))
    }

    @Test("whichever tracer runs, a traceparent with a run of 13 or more digits in its IDs is not handed to it")
    func cardShapedHeaders() {
        func shaped(_ values: String...) -> Bool {
            var headers = HTTPFields()
            for value in values { headers.append(HTTPField(name: HTTPField.Name("traceparent")!, value: value)) }
            return RequestTracingMiddleware.holdsCardNumberShape(headers)
        }
        #expect(shaped("00-4111111111111111aaaaaaaaaaaaaaaa-00f067aa0ba902b7-01"))
        #expect(shaped("00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000001-01"))
        #expect(
            shaped("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "00-aaaa1234567890123aaaaaaaaaaaaaaa-00f067aa0ba902b7-01"))
        // Twelve digits, and digits that only a dash separates: not a card number's shape.
        #expect(!shaped("00-4bf92f3577b34da6a3ce123456789012-00f067aa0ba902b7-01"))
        #expect(!shaped("00-aaaaaaaaaaaaaaaaaaaa123456789012-3456789012aaaaaa-01"))
    }

    @Test("the tracer is handed the trace headers only, repeats kept, never a credential")
    func traceHeadersOnly() {
        let headers: HTTPFields = [
            .authorization: "Bearer secret", .cookie: "session=secret", HTTPField.Name("traceparent")!: "00-a-b-01",
            HTTPField.Name("TraceState")!: "k=v", HTTPField.Name("traceparent")!: "00-c-d-01",
        ]
        let trace = RequestTracingMiddleware.traceHeaders(of: headers)
        #expect(trace[values: HTTPField.Name("traceparent")!] == ["00-a-b-01", "00-c-d-01"])
        #expect(trace[HTTPField.Name("tracestate")!] == "k=v")
        #expect(trace.count == 3)
    }
}
