import Tracing

extension CurlHTTPClient {
    /// Runs one call in a client span of the current trace (of a new one, linked to the current
    /// span, for a request that ``CurlRequest/startsTrace``) and sends that span's `traceparent`
    /// (whichever tracer the process bootstrapped writes it) unless the request has its own. The span records the method, the
    /// scheme, host and port, and the status: never the path or query, which may carry a shop's
    /// own identifiers.
    func traced(
        _ request: CurlRequest, _ call: (CurlRequest) async throws(CurlError) -> CurlResponse
    ) async throws(CurlError) -> CurlResponse {
        let span = Self.clientSpan(for: request)
        defer { span.end() }
        var request = request
        // A caller that sets its own trace header keeps it, unless the call starts a trace: then
        // nothing but the new trace's header goes out.
        if request.startsTrace { request.headers.removeAll { Self.isTraceHeader($0.name) } }
        if !request.headers.contains(where: { Self.isTraceHeader($0.name) }) {
            InstrumentationSystem.instrument.inject(span.context, into: &request.headers, using: CurlHeaderInjector())
        }
        if span.isRecording {
            span.updateAttributes { attributes in
                attributes["http.request.method"] = request.method
                // scheme://host:port, as the admission counts calls per origin.
                let origin = Admission.origin(of: request.url)
                if let schemeEnd = origin.firstRange(of: "://"), let colon = origin.lastIndex(of: ":"), colon > schemeEnd.lowerBound {
                    attributes["url.scheme"] = String(origin[..<schemeEnd.lowerBound])
                    attributes["server.address"] = String(origin[schemeEnd.upperBound..<colon].filter { $0 != "[" && $0 != "]" })
                    attributes["server.port"] = Int(origin[origin.index(after: colon)...])
                }
            }
        }
        do {
            let response = try await call(request)
            span.attributes["http.response.status_code"] = response.status
            if response.status >= 500 { span.setStatus(SpanStatus(code: .error)) }
            return response
        } catch {
            span.attributes["error.type"] = error.kind.rawValue
            span.setStatus(SpanStatus(code: .error))
            throw error
        }
    }

    /// A child of the current span; for a request that starts a trace, a root (a fresh
    /// `topLevel` context: no trace ID, no `tracestate`, no baggage of the caller's) with a link to
    /// the current span, which a tracer that keeps links records and the callee never sees.
    static func clientSpan(for request: CurlRequest) -> any Span {
        let tracer = InstrumentationSystem.tracer
        guard request.startsTrace else { return tracer.startSpan("HTTP \(request.method)", ofKind: .client) }
        let span = tracer.startSpan("HTTP \(request.method)", context: .topLevel, ofKind: .client)
        if let caller = InstrumentationContext.current { span.addLink(SpanLink(context: caller, attributes: [:])) }
        return span
    }

    /// `traceparent` or `tracestate`, in any case.
    static func isTraceHeader(_ name: String) -> Bool {
        let lowered = name.lowercased()
        return lowered == "traceparent" || lowered == "tracestate"
    }
}

/// Writes a propagated field as a request header.
struct CurlHeaderInjector: Injector {
    func inject(_ value: String, forKey key: String, into carrier: inout [(name: String, value: String)]) {
        carrier.append((name: key, value: value))
    }
}
