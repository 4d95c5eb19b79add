import Foundation
import Logging
import Synchronization

/// Log lines as JSON, one object per line on standard error, for log shippers:
/// `{"time":"2026-01-31T12:00:00.123Z","level":"info","label":"orchard","message":"…","metadata":{…}}`.
/// Metadata is what the call site and the logger carry, nothing more: the same fields the text
/// format prints, so no secret can appear here that would not appear there.
public struct JSONLogHandler: LogHandler {
    public var logLevel: Logger.Level = .info
    public var metadata: Logger.Metadata = [:]
    public var metadataProvider: Logger.MetadataProvider?
    let label: String
    let write: @Sendable ([UInt8]) -> Void

    /// - Parameter write: receives each whole line, newline included (default: standard error).
    public init(
        label: String, metadataProvider: Logger.MetadataProvider? = LoggingSystem.metadataProvider,
        write: @escaping @Sendable ([UInt8]) -> Void = JSONLogHandler.standardError
    ) {
        self.label = label
        self.metadataProvider = metadataProvider
        self.write = write
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        var merged = metadata
        if let provided = metadataProvider?.get() { merged.merge(provided) { $1 } }
        if let own = event.metadata { merged.merge(own) { $1 } }
        if let error = event.error { merged["error"] = "\(error)" }
        write(Self.line(time: Date(), level: event.level, label: label, message: event.message.description, metadata: merged))
    }

    /// One JSON object and a newline; keys in a fixed order, metadata keys sorted.
    public static func line(time: Date, level: Logger.Level, label: String, message: String, metadata: Logger.Metadata) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(160 + message.utf8.count)
        out += Array(#"{"time":""#.utf8) + Array(timestamp(time).utf8) + Array(#"","level":"#.utf8)
        appendString(level.rawValue, to: &out)
        out += Array(#","label":"#.utf8)
        appendString(label, to: &out)
        out += Array(#","message":"#.utf8)
        appendString(message, to: &out)
        out += Array(#","metadata":"#.utf8)
        appendValue(.dictionary(metadata), to: &out)
        out += Array("}\n".utf8)
        return out
    }

    static func appendValue(_ value: Logger.Metadata.Value, to out: inout [UInt8]) {
        switch value {
        case .string(let text): appendString(text, to: &out)
        case .stringConvertible(let item): appendString(item.description, to: &out)
        case .array(let items):
            out.append(UInt8(ascii: "["))
            for (index, item) in items.enumerated() {
                if index > 0 { out.append(UInt8(ascii: ",")) }
                appendValue(item, to: &out)
            }
            out.append(UInt8(ascii: "]"))
        case .dictionary(let entries):
            out.append(UInt8(ascii: "{"))
            for (index, key) in entries.keys.sorted().enumerated() {
                if index > 0 { out.append(UInt8(ascii: ",")) }
                appendString(key, to: &out)
                out.append(UInt8(ascii: ":"))
                appendValue(entries[key]!, to: &out)
            }
            out.append(UInt8(ascii: "}"))
        }
    }

    /// A JSON string: quotes, backslashes and control characters escaped, the rest as UTF-8.
    static func appendString(_ text: String, to out: inout [UInt8]) {
        let hex = Array("0123456789abcdef".utf8)
        out.append(UInt8(ascii: "\""))
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "\""): out += [UInt8(ascii: "\\"), UInt8(ascii: "\"")]
            case UInt8(ascii: "\\"): out += [UInt8(ascii: "\\"), UInt8(ascii: "\\")]
            case 0x0A: out += [UInt8(ascii: "\\"), UInt8(ascii: "n")]
            case 0x0D: out += [UInt8(ascii: "\\"), UInt8(ascii: "r")]
            case 0x09: out += [UInt8(ascii: "\\"), UInt8(ascii: "t")]
            case 0..<0x20, 0x7F:
                out += Array(#"\u00"#.utf8) + [hex[Int(byte >> 4)], hex[Int(byte & 0x0F)]]
            default: out.append(byte)
            }
        }
        out.append(UInt8(ascii: "\""))
    }

    /// UTC, ISO 8601 with milliseconds.
    static func timestamp(_ date: Date) -> String {
        let milliseconds = Int64((date.timeIntervalSince1970 * 1000).rounded(.down))
        var seconds = time_t(milliseconds / 1000)
        var parts = tm()
        gmtime_r(&seconds, &parts)
        func two(_ value: Int32) -> String { value < 10 ? "0\(value)" : "\(value)" }
        let fraction = String(milliseconds % 1000)
        return "\(parts.tm_year + 1900)-\(two(parts.tm_mon + 1))-\(two(parts.tm_mday))T\(two(parts.tm_hour)):\(two(parts.tm_min)):"
            + "\(two(parts.tm_sec)).\(String(repeating: "0", count: 3 - fraction.count))\(fraction)Z"
    }

    /// Whole lines, one at a time, so lines from different threads never interleave.
    private static let lock = Mutex(())

    public static let standardError: @Sendable ([UInt8]) -> Void = { line in
        lock.withLock { _ in
            var offset = 0
            while offset < line.count {
                let written = line[offset...].withUnsafeBytes { Foundation.write(2, $0.baseAddress, $0.count) }
                if written > 0 {
                    offset += written
                } else if errno != EINTR {
                    return
                }
            }
        }
    }
}
