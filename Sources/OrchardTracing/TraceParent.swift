import Instrumentation

/// A W3C Trace Context `traceparent` (https://www.w3.org/TR/trace-context/): the trace a call
/// belongs to, the span that made it and whether the trace is sampled. Orchard reads version 00
/// and the version-00 prefix of later versions, and always writes version 00.
public struct TraceParent: Sendable, Hashable {
    /// 16 bytes, never all zero; 32 lowercase hexadecimal digits on the wire and in logs.
    public struct TraceID: Sendable, Hashable, CustomStringConvertible {
        public let high: UInt64
        public let low: UInt64

        public init?(high: UInt64, low: UInt64) {
            guard high != 0 || low != 0 else { return nil }
            self.high = high
            self.low = low
        }

        /// A random one, as a trace's first service makes it; never PAN-shaped (``TraceParent/looksLikeCardNumber(_:)``).
        public static func random<G: RandomNumberGenerator>(using generator: inout G) -> TraceID {
            while true {
                if let id = TraceID(high: generator.next(), low: generator.next()), !TraceParent.looksLikeCardNumber(id.description) {
                    return id
                }
            }
        }

        public var description: String { TraceParent.hex(high) + TraceParent.hex(low) }
    }

    /// 8 bytes, never all zero; 16 lowercase hexadecimal digits.
    public struct SpanID: Sendable, Hashable, CustomStringConvertible {
        public let value: UInt64

        public init?(_ value: UInt64) {
            guard value != 0 else { return nil }
            self.value = value
        }

        /// A random one; never PAN-shaped (``TraceParent/looksLikeCardNumber(_:)``).
        public static func random<G: RandomNumberGenerator>(using generator: inout G) -> SpanID {
            while true {
                if let id = SpanID(generator.next()), !TraceParent.looksLikeCardNumber(id.description) { return id }
            }
        }

        public var description: String { TraceParent.hex(value) }
    }

    public var traceID: TraceID
    /// The span of the caller (received) or of this call (sent).
    public var spanID: SpanID
    /// The `sampled` flag: the caller may be recording the trace.
    public var sampled: Bool

    public init(traceID: TraceID, spanID: SpanID, sampled: Bool) {
        self.traceID = traceID
        self.spanID = spanID
        self.sampled = sampled
    }

    /// Parses a header value; nil for anything the specification says to ignore: a wrong length
    /// or separator, upper-case or non-hex digits, version ff, or an all-zero trace or parent ID.
    public init?(_ value: String) {
        let bytes = Array(value.utf8)
        guard bytes.count >= 55, let version = Self.number(bytes[0..<2]), version != 0xFF else { return nil }
        // Version 00 is exactly 55 characters; a later version may append fields after a dash.
        guard version == 0 ? bytes.count == 55 : (bytes.count == 55 || bytes[55] == UInt8(ascii: "-")) else { return nil }
        guard bytes[2] == UInt8(ascii: "-"), bytes[35] == UInt8(ascii: "-"), bytes[52] == UInt8(ascii: "-"),
            let high = Self.number(bytes[3..<19]), let low = Self.number(bytes[19..<35]), let traceID = TraceID(high: high, low: low),
            let span = Self.number(bytes[36..<52]), let spanID = SpanID(span), let flags = Self.number(bytes[53..<55])
        else { return nil }
        self.init(traceID: traceID, spanID: spanID, sampled: flags & 0x01 == 1)
    }

    /// The header value, version 00.
    public var headerValue: String { "00-\(traceID)-\(spanID)-\(sampled ? "01" : "00")" }

    /// Lower-case hexadecimal digits only (the specification refuses upper case); at most 16.
    static func number(_ digits: ArraySlice<UInt8>) -> UInt64? {
        var value: UInt64 = 0
        for digit in digits {
            let nibble: UInt8
            switch digit {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): nibble = digit - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): nibble = digit - UInt8(ascii: "a") + 10
            default: return nil
            }
            value = value << 4 | UInt64(nibble)
        }
        return value
    }

    /// Whether `text` holds a run of 13 to 19 decimal digits (or longer), the shape of a card
    /// number: log scanners for card data (PCI DSS) flag such runs, and about 2 random trace IDs
    /// in a hundred hold one, so the IDs Orchard makes never do (redrawing costs nothing).
    public static func looksLikeCardNumber(_ text: String) -> Bool {
        var run = 0
        for byte in text.utf8 {
            run = (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) ? run + 1 : 0
            if run >= 13 { return true }
        }
        return false
    }

    static func hex(_ value: UInt64) -> String {
        let digits = String(value, radix: 16)
        return String(repeating: "0", count: 16 - digits.count) + digits
    }
}

private enum TraceParentKey: InstrumentationContextKey {
    typealias Value = TraceParent
    static let nameOverride: String? = "traceparent"
}

extension InstrumentationContext {
    /// The W3C trace context of the current span (``W3CTracer``'s spans put it here).
    public var traceParent: TraceParent? {
        get { self[TraceParentKey.self] }
        set { self[TraceParentKey.self] = newValue }
    }
}
