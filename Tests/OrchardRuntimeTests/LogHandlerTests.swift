import Logging
import Synchronization
import Testing

@testable import OrchardRuntime

/// Orchard's log lines: the stream handler's format, metadata rendered only when a line is written.
@Suite("Log handler")
struct LogHandlerTests {
    /// Lines written, in order.
    final class Lines: TextOutputStream, Sendable {
        private let text = Mutex("")
        var lines: [Substring] { text.withLock { $0.split(separator: "\n") } }
        func write(_ string: String) { text.withLock { $0 += string } }
    }

    @Test("logger metadata and a line's own metadata both appear, the line's winning; levels filter as before")
    func metadata() {
        let lines = Lines()
        var logger = Logger(label: "orchard.test") { label in
            DeferredMetadataLogHandler(stream: StreamLogHandler(label: label, stream: lines, metadataProvider: nil))
        }
        logger.logLevel = .info
        logger[metadataKey: "request"] = "r-1"
        logger[metadataKey: "merchant"] = "m-1"
        logger.info("payment authorized", metadata: ["merchant": "m-2", "amount": "990 EUR"])
        logger.debug("not written")
        logger[metadataKey: "request"] = nil
        logger.warning("second")
        let written = lines.lines
        #expect(written.count == 2)
        #expect(
            written.first?.hasSuffix("info orchard.test: amount=990 EUR merchant=m-2 request=r-1 [OrchardRuntimeTests] payment authorized")
                == true)
        #expect(written.last?.hasSuffix("warning orchard.test: merchant=m-1 [OrchardRuntimeTests] second") == true)
    }

    @Test("control characters in a message or metadata are escaped: one log call is one line, and no terminal escape gets through")
    func controlCharacters() {
        let lines = Lines()
        let logger = Logger(label: "orchard.test") { label in
            DeferredMetadataLogHandler(stream: StreamLogHandler(label: label, stream: lines, metadataProvider: nil))
        }
        logger.warning(
            "refused \("x\ninfo orchard: payment authorized")",
            metadata: ["path": "/a\r\nb", "agent": "\u{1B}[31mred\u{7}", "list": ["ok", "bad\u{2028}"], "nested": ["k\n": "v\t"]])
        let written = lines.lines
        #expect(written.count == 1, "\(written)")
        let line = String(written.first ?? "")
        #expect(line.contains(#"refused x\ninfo orchard: payment authorized"#))
        #expect(line.contains(#"path=/a\r\nb"#))
        #expect(line.contains(#"agent=\u{1B}[31mred\u{7}"#))
        // Lists and dictionaries are printed as Swift prints them (quoted); escaped all the same.
        #expect(!line.unicodeScalars.contains { $0.value < 0x20 || $0.value == 0x2028 })
        #expect(LogText.escaped("plain text, é and 🍏") == "plain text, é and 🍏")
    }
}
