import CurlClient
import Foundation
import Instrumentation
import OrchardCore
import OrchardIntegrationTesting
import OrchardServer
import OrchardServerTesting
import OrchardTesting
import OrchardTracing
import ShopCallbacks
import Testing
import Tracing

/// Calls to a shop's or tenant's URL start a trace of their own: a request's trace ID (the
/// operator's, or its upstream proxy's) and its `tracestate` never reach them. Each call's span
/// links to the request's span instead, which Orchard's tracer records.
@Suite("Traces: calls to shops and tenants start a trace of their own")
struct ShopCallTracingTests {
    init() { TestTracing.install() }

    /// A trusted proxy's trace headers, a new trace for each test (the tracer's record is the process's).
    static func traceHeaders(_ caller: TraceParent) -> [(name: String, value: String)] {
        [(name: "traceparent", value: caller.headerValue), (name: "tracestate", value: "operator=upstream-secret")]
    }

    /// The call a shop received: its `traceparent` is a new trace, never the caller's, and no
    /// `tracestate` came with it; Orchard's client span for it links to the request's server span.
    static func expectNewTrace(_ delivery: MockWebhookReceiver.Delivery, caller: TraceParent, route: String) throws {
        let sent = try #require(delivery.trace["traceparent"].flatMap(TraceParent.init), "\(delivery.trace)")
        #expect(sent.traceID != caller.traceID)
        #expect(delivery.trace["tracestate"] == nil)
        let server = try #require(TestTracing.spans(in: caller.traceID).first { $0.kind == .server && $0.operationName.hasSuffix(route) })
        let call = try #require(TestTracing.spans(in: sent.traceID).first { $0.kind == .client })
        #expect(call.parentSpanID == nil, "a root")
        #expect(call.links.contains(server.traceParent), "linked to the request's span: \(call.links)")
    }

    @Test("POST /admin/webhooks/test: the shop's endpoint gets a new trace, linked to the request's span")
    func testWebhook() async throws {
        let caller = TracingTests.traceparent()
        let receiver = MockWebhookReceiver(secret: WebhookSigningTests.current)
        try await receiver.start()
        defer { Task { await receiver.stop() } }
        try await WebhookSigningTests.with(receiver: receiver) { server in
            let body = #"{"merchantIdentifier": "\#(TestMaterial.merchantIdentifier)", "type": "payment.authorized"}"#
            let answer = try await server.send(
                "POST", "/admin/webhooks/test", body: Array(body.utf8),
                extraHeaders: MoreMerchants.authorization + Self.traceHeaders(caller))
            #expect(answer.status == 200)
            let delivery = try #require(receiver.deliveries.first)
            try Self.expectNewTrace(delivery, caller: caller, route: "POST /admin/webhooks/test")
        }
    }

    @Test("a quote call: the shop's quote URL gets a new trace, linked to the shopper's request's span")
    func quote() async throws {
        let caller = TracingTests.traceparent()
        let quotes = MockWebhookReceiver(secret: QuoteTests.secret)
        try await quotes.start()
        defer { Task { await quotes.stop() } }
        try await QuoteTests.with(quotes) { server in
            let key = try await server.apiKey()
            let created = try await server.api("POST", "/v1/payment-requests", key: key, json: PaymentsAPITests.cart, idempotencyKey: "t1")
            let id = try #require(created.json?["id"] as? String)
            quotes.answer(200, body: QuoteTests.quote)
            let contact = #"{"countryCode": "FR", "postalCode": "75011", "locality": "Paris"}"#
            let update = try await server.send(
                "POST", "/api/orders/\(id)/shipping-contact", body: Array(contact.utf8), extraHeaders: Self.traceHeaders(caller))
            #expect(update.status == 200)
            let asked = try #require(quotes.deliveries.last)
            try Self.expectNewTrace(asked, caller: caller, route: "shipping-contact")
        }
    }

    @Test("a webhook delivery to a tenant's endpoint inside a request's span (a retirement's last ones) starts a new trace")
    func tenantDelivery() async throws {
        let caller = TracingTests.traceparent()
        let receiver = MockWebhookReceiver(secret: String(repeating: "s", count: 40))
        try await receiver.start()
        defer { Task { await receiver.stop() } }
        let transport = try CurlShopTransport(tenants: TenantDestinations(privateNetworks: [try #require(IPNetwork("127.0.0.0/8"))]))
        var endpoint = WebhookEndpoint(url: receiver.url, secret: Secret(String(repeating: "s", count: 40)))
        endpoint.chosenBy = .tenant
        // The request's span, continuing a caller's trace, as RequestTracingMiddleware starts it.
        var context = InstrumentationContext.topLevel
        InstrumentationSystem.instrument.extract(
            ["traceparent": caller.headerValue, "tracestate": "operator=upstream-secret"], into: &context, using: DictionaryExtractor())
        let span = InstrumentationSystem.tracer.startSpan("POST /admin/merchants/{id}/unregister", context: context, ofKind: .server)
        // A trace header among the call's own is dropped too: only the new trace's goes out.
        let headers = [(name: "Content-Type", value: "application/json"), (name: "TraceParent", value: caller.headerValue)]
        let reply = try await InstrumentationContext.$current.withValue(span.context) {
            try await transport.post(to: endpoint, headers: headers, body: Array("{}".utf8), timeout: .seconds(5), merchant: "tenant-7")
        }
        span.end()
        #expect(reply.status == 200)
        let delivery = try #require(receiver.deliveries.first)
        try Self.expectNewTrace(delivery, caller: caller, route: "unregister")
    }
}

struct DictionaryExtractor: Extractor {
    func extract(key: String, from carrier: [String: String]) -> String? { carrier[key] }
}
