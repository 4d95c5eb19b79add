import Instrumentation
import Logging
import OrchardTracing
import Synchronization
import Testing
import Tracing

@Suite("W3C trace context")
struct TraceParentTests {
    // The example of the W3C Trace Context recommendation, section 3.2.
    let example = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

    @Test("a valid traceparent is read and written back unchanged")
    func roundTrip() throws {
        let parent = try #require(TraceParent(example))
        #expect(parent.traceID.description == "4bf92f3577b34da6a3ce929d0e0e4736")
        #expect(parent.spanID.description == "00f067aa0ba902b7")
        #expect(parent.sampled)
        #expect(parent.headerValue == example)
        #expect(TraceParent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00")?.sampled == false)
    }

    @Test("a later version is read by its version-00 prefix and written as version 00")
    func laterVersion() throws {
        let parent = try #require(TraceParent("cc-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-what-the-future-adds"))
        #expect(parent.headerValue == example)
        #expect(TraceParent("cc-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01") != nil)
    }

    @Test(
        "what the recommendation says to ignore is ignored",
        arguments: [
            "", "00", "garbage",
            "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",  // version ff is invalid
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",  // all-zero trace ID
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",  // all-zero parent ID
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",  // upper case
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra",  // version 00 has no more fields
            "00-4bf92f3577b34da6a3ce929d0e0e473-600f067aa0ba902b7-01",  // a dash out of place
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0g",  // not hex
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01 ",  // trailing space
            "cc-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01.more",  // a later version's fields follow a dash
            "0-04bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
        ])
    func invalid(_ value: String) {
        #expect(TraceParent(value) == nil)
    }

    @Test("a span continues the caller's trace with a span ID of its own, and a call out names that span")
    func continuesTrace() throws {
        let ended = Mutex<[FinishedSpan]>([])
        let tracer = W3CTracer { span in ended.withLock { $0.append(span) } }
        var context = InstrumentationContext.topLevel
        tracer.extract(["traceparent": example], into: &context, using: DictionaryExtractor())
        let span = tracer.startSpan("HTTP POST", context: context, ofKind: .server)
        let own = try #require(span.context.traceParent)
        #expect(own.traceID.description == "4bf92f3577b34da6a3ce929d0e0e4736")
        #expect(own.spanID.description != "00f067aa0ba902b7")
        var sent: [String: String] = [:]
        tracer.inject(span.context, into: &sent, using: DictionaryInjector())
        #expect(sent == ["traceparent": own.headerValue])
        span.attributes["http.response.status_code"] = 200
        span.end()
        span.end()
        let recorded = ended.withLock { $0 }
        #expect(recorded.count == 1)
        #expect(recorded.first?.parentSpanID?.description == "00f067aa0ba902b7")
        #expect(recorded.first?.attributes.get("http.response.status_code") == .int64(200))
    }

    @Test("without a valid traceparent a span starts a new, random trace")
    func newTrace() throws {
        let tracer = W3CTracer()
        var context = InstrumentationContext.topLevel
        tracer.extract(
            ["traceparent": "00-00000000000000000000000000000000-00f067aa0ba902b7-01"], into: &context, using: DictionaryExtractor())
        #expect(context.traceParent == nil)
        let first = try #require(tracer.startSpan("a", context: context, ofKind: .server).context.traceParent)
        let second = try #require(tracer.startSpan("b", context: context, ofKind: .server).context.traceParent)
        #expect(first.traceID != second.traceID)
        #expect(first.traceID.description.count == 32)
        #expect(first.sampled)
    }

    @Test("the IDs Orchard makes never hold a card-number-shaped run of 13 or more digits, which log scanners flag")
    func noCardShapedIDs() throws {
        // 0x4111111111111111 is "4111111111111111" in hex: a Luhn-valid test card number.
        var generator = ScriptedGenerator(values: [0x4111_1111_1111_1111, 0x00f0_67aa_0ba9_02b7])
        #expect(TraceParent.SpanID.random(using: &generator).description == "00f067aa0ba902b7")
        generator = ScriptedGenerator(values: [0x1, 0x1132_2219_3063_9bee, 0x4bf9_2f35_77b3_4da6, 0xa3ce_929d_0e0e_4736])
        #expect(TraceParent.TraceID.random(using: &generator).description == "4bf92f3577b34da6a3ce929d0e0e4736")
        #expect(TraceParent.looksLikeCardNumber("1ff9c9acdde1132221930639beea7506"))
        #expect(!TraceParent.looksLikeCardNumber("4bf92f3577b34da6a3ce929d0e0e4736"))
        var system = SystemRandomNumberGenerator()
        for _ in 0..<2_000 {
            #expect(!TraceParent.looksLikeCardNumber(TraceParent.TraceID.random(using: &system).description))
        }
    }

    @Test(
        "a traceparent whose trace or parent ID holds a card number's shape is not continued: the span starts a trace of its own",
        arguments: [
            "00-4111111111111111aaaaaaaaaaaaaaaa-00f067aa0ba902b7-01",  // a Luhn-valid test card number leads the trace ID
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0004111111111111-01",  // 16 digits in the parent ID
        ])
    func cardShapedNotContinued(_ value: String) throws {
        let tracer = W3CTracer()
        var context = InstrumentationContext.topLevel
        tracer.extract(["traceparent": value], into: &context, using: DictionaryExtractor())
        #expect(context.traceParent == nil)
        let own = try #require(tracer.startSpan("HTTP POST", context: context, ofKind: .server).context.traceParent)
        #expect(!value.contains(own.traceID.description))
        #expect(!TraceParent.looksLikeCardNumber(own.headerValue))
    }

    @Test("an ordinary traceparent with short digit runs is still continued")
    func ordinaryContinued() throws {
        // Twelve digits in a row: one short of a card number's shape.
        let value = "00-4bf92f3577b34da6a3ce123456789012-00f067aa0ba902b7-01"
        var context = InstrumentationContext.topLevel
        W3CTracer().extract(["traceparent": value], into: &context, using: DictionaryExtractor())
        #expect(context.traceParent?.headerValue == value)
    }

    @Test("a span keeps the trace context of the spans linked to it, for record; the link does not make it their child")
    func links() throws {
        let ended = Mutex<[FinishedSpan]>([])
        let tracer = W3CTracer { span in ended.withLock { $0.append(span) } }
        let request = tracer.startSpan("POST /admin/webhooks/test", context: .topLevel, ofKind: .server)
        let call = tracer.startSpan("HTTP POST", context: .topLevel, ofKind: .client)
        call.addLink(SpanLink(context: request.context, attributes: [:]))
        call.addLink(SpanLink(context: .topLevel, attributes: [:]))
        call.end()
        let recorded = try #require(ended.withLock { $0.first })
        #expect(recorded.links == [try #require(request.context.traceParent)])
        #expect(recorded.traceParent.traceID != request.context.traceParent?.traceID)
        #expect(recorded.parentSpanID == nil)
    }

    @Test("log lines written inside a span carry its trace_id and span_id, and none outside")
    func logMetadata() throws {
        let span = W3CTracer().startSpan("a", context: .topLevel, ofKind: .server)
        let parent = try #require(span.context.traceParent)
        let inside = InstrumentationContext.$current.withValue(span.context) { Logger.MetadataProvider.traceContext.get() }
        #expect(inside == ["trace_id": "\(parent.traceID)", "span_id": "\(parent.spanID)"])
        #expect(InstrumentationContext.$current.withValue(nil) { Logger.MetadataProvider.traceContext.get() }.isEmpty)
    }
}

struct DictionaryExtractor: Extractor {
    func extract(key: String, from carrier: [String: String]) -> String? { carrier[key] }
}

struct DictionaryInjector: Injector {
    func inject(_ value: String, forKey key: String, into carrier: inout [String: String]) { carrier[key] = value }
}

/// Returns the given values in order, then repeats the last.
struct ScriptedGenerator: RandomNumberGenerator {
    var values: [UInt64]

    mutating func next() -> UInt64 {
        values.count > 1 ? values.removeFirst() : values[0]
    }
}
