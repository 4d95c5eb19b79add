import HTTPTypes
import Hummingbird
import OrchardCore
import OrchardServices
import OrchardTracing
import Tracing

/// Runs each request in a server span of whichever tracer the process bootstrapped, so log lines
/// carry its trace and calls out send it on. The span is named by the route's pattern
/// (`POST /v1/payment-requests/{id}/capture`), never the path itself, which may hold a client
/// secret; it records the method, the route and the status.
struct RequestTracingMiddleware: RouterMiddleware {
    typealias Context = OrchardRequestContext
    let accept: TraceparentTrust
    let trustedProxies: [IPNetwork]

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        var parent = InstrumentationContext.current ?? .topLevel
        if request.headers.contains(Self.traceparent), accept.accepts(context.peerAddress, trustedProxies: trustedProxies) {
            // Only the trace headers: a tracer may log its carrier (swift-otel's does, for an
            // invalid traceparent), and the other headers may hold credentials.
            let trace = Self.traceHeaders(of: request.headers)
            // Whichever tracer runs: a card-number-shaped trace ID would be on every log line of
            // the request, and Orchard's own IDs never hold one; such a request starts a new trace.
            if !Self.holdsCardNumberShape(trace) {
                InstrumentationSystem.instrument.extract(trace, into: &parent, using: SingleHeaderExtractor())
            }
        }
        let span = InstrumentationSystem.tracer.startSpan("HTTP \(request.method.rawValue)", context: parent, ofKind: .server)
        defer { span.end() }
        do {
            let response = try await InstrumentationContext.$current.withValue(span.context) { try await next(request, context) }
            finish(span, request: request, context: context, status: response.status.code)
            return response
        } catch {
            finish(span, request: request, context: context, status: (error as? any HTTPResponseError)?.status.code ?? 500)
            throw error
        }
    }

    /// `traceparent` and `tracestate`, as sent (repeats kept, for the extractor to refuse).
    static func traceHeaders(of headers: HTTPFields) -> HTTPFields {
        var trace = HTTPFields()
        for field in headers where field.name == Self.traceparent || field.name == Self.tracestate {
            trace.append(field)
        }
        return trace
    }

    /// Whether a `traceparent` holds a run of 13 or more decimal digits in its trace or parent ID
    /// (its dashes end a run, so the version and flags never join one).
    static func holdsCardNumberShape(_ trace: HTTPFields) -> Bool {
        trace[values: Self.traceparent].contains { TraceParent.looksLikeCardNumber($0) }
    }

    static let traceparent = HTTPField.Name("traceparent")!
    static let tracestate = HTTPField.Name("tracestate")!

    private func finish(_ span: any Span, request: Request, context: Context, status: Int) {
        if let route = context.endpointPath {
            span.operationName = "\(request.method.rawValue) \(route)"
        }
        if status >= 500 { span.setStatus(SpanStatus(code: .error)) }
        guard span.isRecording else { return }
        span.updateAttributes { attributes in
            attributes["http.request.method"] = request.method.rawValue
            attributes["http.route"] = context.endpointPath
            attributes["http.response.status_code"] = status
        }
    }
}

/// A header's value when it is sent once; a repeated `traceparent` is invalid, as the W3C
/// recommendation has it, and the request then starts a trace of its own.
struct SingleHeaderExtractor: Extractor {
    func extract(key: String, from carrier: HTTPFields) -> String? {
        guard let name = HTTPField.Name(key) else { return nil }
        let values = carrier[values: name]
        return values.count == 1 ? values[0] : nil
    }
}
