import Instrumentation
import Logging
import Synchronization
import Tracing

/// A tracer that keeps W3C trace context and nothing else: each span gets a span ID in the
/// caller's trace (or a new trace), its context carries them (``InstrumentationContext/traceParent``)
/// to log lines and to the `traceparent` of calls out. It exports nothing; `record` sees each
/// span as it ends, for tests. An operator who wants spans exported bootstraps an exporting tracer
/// (swift-otel's) instead: nothing in Orchard but its startup names this one.
public struct W3CTracer: Tracer {
    public typealias Span = W3CSpan

    let record: (@Sendable (FinishedSpan) -> Void)?

    /// - Parameter record: called once for each span as it ends.
    public init(record: (@Sendable (FinishedSpan) -> Void)? = nil) {
        self.record = record
    }

    public func startSpan<Instant: TracerInstant>(
        _ operationName: String, context: @autoclosure () -> InstrumentationContext, ofKind kind: SpanKind,
        at instant: @autoclosure () -> Instant, function: String, file fileID: String, line: UInt
    ) -> W3CSpan {
        var generator = SystemRandomNumberGenerator()
        var spanContext = context()
        let parent = spanContext.traceParent
        let own = TraceParent(
            traceID: parent?.traceID ?? .random(using: &generator), spanID: .random(using: &generator), sampled: parent?.sampled ?? true)
        spanContext.traceParent = own
        return W3CSpan(
            operationName: operationName, kind: kind, context: spanContext, parentSpanID: parent?.spanID,
            startNanoseconds: instant().nanosecondsSinceEpoch, record: record)
    }

    public func forceFlush() {}

    /// Reads `traceparent`; an invalid or absent one leaves the context as it was (a new trace),
    /// and so does one whose IDs hold a card number's shape (``TraceParent/looksLikeCardNumber(_:)``):
    /// continued, its trace ID would be on every log line of the call.
    public func extract<Carrier, Extract: Extractor>(
        _ carrier: Carrier, into context: inout InstrumentationContext, using extractor: Extract
    ) where Extract.Carrier == Carrier {
        if let value = extractor.extract(key: "traceparent", from: carrier), !TraceParent.looksLikeCardNumber(value),
            let parent = TraceParent(value)
        {
            context.traceParent = parent
        }
    }

    /// Writes `traceparent` for the context's span, when it has one.
    public func inject<Carrier, Inject: Injector>(_ context: InstrumentationContext, into carrier: inout Carrier, using injector: Inject)
    where Inject.Carrier == Carrier {
        if let parent = context.traceParent {
            injector.inject(parent.headerValue, forKey: "traceparent", into: &carrier)
        }
    }
}

/// A span that ended, as ``W3CTracer``'s `record` receives it.
public struct FinishedSpan: Sendable {
    public var operationName: String
    public var kind: SpanKind
    public var traceParent: TraceParent
    public var parentSpanID: TraceParent.SpanID?
    /// The spans it was linked to (`addLink`) that carried W3C trace context.
    public var links: [TraceParent]
    public var attributes: SpanAttributes
    public var status: SpanStatus?
    public var startNanoseconds: UInt64
    public var endNanoseconds: UInt64
}

/// ``W3CTracer``'s span: its name, attributes and status, kept until it ends.
public final class W3CSpan: Tracing.Span {
    public let context: InstrumentationContext
    let kind: SpanKind
    let parentSpanID: TraceParent.SpanID?
    let startNanoseconds: UInt64
    let record: (@Sendable (FinishedSpan) -> Void)?
    private struct State {
        var operationName: String
        var attributes: SpanAttributes = [:]
        var links: [TraceParent] = []
        var status: SpanStatus?
        var ended = false
    }
    private let state: Mutex<State>

    init(
        operationName: String, kind: SpanKind, context: InstrumentationContext, parentSpanID: TraceParent.SpanID?,
        startNanoseconds: UInt64, record: (@Sendable (FinishedSpan) -> Void)?
    ) {
        self.context = context
        self.kind = kind
        self.parentSpanID = parentSpanID
        self.startNanoseconds = startNanoseconds
        self.record = record
        state = Mutex(State(operationName: operationName))
    }

    public var operationName: String {
        get { state.withLock { $0.operationName } }
        set { state.withLock { $0.operationName = newValue } }
    }

    public var attributes: SpanAttributes {
        get { state.withLock { $0.attributes } }
        set { state.withLock { $0.attributes = newValue } }
    }

    /// Only a recording span's attributes are worth setting; without `record` nothing reads them.
    public var isRecording: Bool { record != nil && !state.withLock { $0.ended } }

    public func setStatus(_ status: SpanStatus) { state.withLock { $0.status = status } }
    public func addEvent(_ event: SpanEvent) {}
    /// Keeps the linked span's trace context, for `record`; a link's attributes are not kept.
    public func addLink(_ link: SpanLink) {
        guard let linked = link.context.traceParent else { return }
        state.withLock { $0.links.append(linked) }
    }

    /// Errors become an error status; their text is not kept, as it may carry what a caller sent.
    public func recordError<Instant: TracerInstant>(_ error: any Error, attributes: SpanAttributes, at instant: @autoclosure () -> Instant)
    {
        setStatus(SpanStatus(code: .error))
    }

    public func end<Instant: TracerInstant>(at instant: @autoclosure () -> Instant) {
        let finished: State? = state.withLock { state in
            guard !state.ended else { return nil }
            state.ended = true
            return state
        }
        guard let finished, let record, let traceParent = context.traceParent else { return }
        record(
            FinishedSpan(
                operationName: finished.operationName, kind: kind, traceParent: traceParent, parentSpanID: parentSpanID,
                links: finished.links, attributes: finished.attributes, status: finished.status, startNanoseconds: startNanoseconds,
                endNanoseconds: instant().nanosecondsSinceEpoch))
    }
}

extension Logger.MetadataProvider {
    /// `trace_id` and `span_id` of the current span, on every log line written inside one.
    public static let traceContext = Logger.MetadataProvider {
        guard let parent = InstrumentationContext.current?.traceParent else { return [:] }
        return ["trace_id": "\(parent.traceID)", "span_id": "\(parent.spanID)"]
    }
}
