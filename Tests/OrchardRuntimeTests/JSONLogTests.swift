import Foundation
import Logging
import OrchardRuntime
import Synchronization
import Testing

@Suite("JSON log lines")
struct JSONLogTests {
    @Test("a line is one JSON object: fixed fields, nested metadata, escaped quotes, newlines and control characters")
    func lineShape() throws {
        let metadata: Logger.Metadata = [
            "quote": "say \"hi\"\nthen\tleave\u{01}", "nested": ["list": ["a", .stringConvertible(42)], "ünï": "cödé"],
        ]
        let bytes = JSONLogHandler.line(
            time: Date(timeIntervalSince1970: 1_700_000_000.5), level: .warning, label: "orchard", message: "line one\nline two",
            metadata: metadata)
        #expect(bytes.last == 0x0A && bytes.dropLast().allSatisfy { $0 != 0x0A }, "one line, newline-terminated")
        let parsed = try JSONSerialization.jsonObject(with: Data(bytes))
        let object = try #require(parsed as? [String: Any])
        #expect(object["time"] as? String == "2023-11-14T22:13:20.500Z")
        #expect(object["level"] as? String == "warning")
        #expect(object["label"] as? String == "orchard")
        #expect(object["message"] as? String == "line one\nline two")
        let fields = try #require(object["metadata"] as? [String: Any])
        #expect(fields["quote"] as? String == "say \"hi\"\nthen\tleave\u{01}")
        let nested = try #require(fields["nested"] as? [String: Any])
        #expect(nested["list"] as? [String] == ["a", "42"])
        #expect(nested["ünï"] as? String == "cödé")
    }

    @Test("the handler merges its own, the provider's and the call's metadata, the call's winning")
    func merging() throws {
        let lines = LockedLines()
        var handler = JSONLogHandler(label: "t", metadataProvider: .init { ["request": "r1", "shared": "provider"] }) { lines.append($0) }
        handler[metadataKey: "shared"] = "handler"
        handler[metadataKey: "service"] = "orchard"
        let logger = Logger(label: "t") { _ in handler }
        logger.info("hello", metadata: ["shared": "call"])
        let line = try #require(lines.all.first)
        let parsed = try JSONSerialization.jsonObject(with: Data(line))
        let object = try #require(parsed as? [String: Any])
        #expect(object["metadata"] as? [String: String] == ["request": "r1", "service": "orchard", "shared": "call"])
    }

}

/// Lines a test handler writes, kept in order.
final class LockedLines: Sendable {
    private let lines = Mutex<[[UInt8]]>([])
    func append(_ line: [UInt8]) { lines.withLock { $0.append(line) } }
    var all: [[UInt8]] { lines.withLock { $0 } }
}
