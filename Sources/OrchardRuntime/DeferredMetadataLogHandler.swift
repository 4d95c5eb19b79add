import Logging

/// swift-log's `StreamLogHandler`, minus one cost on every request: that handler renders all
/// of its metadata into text each time any of it is set, and Hummingbird sets a request ID on
/// every request's logger, logged or not. This one keeps the metadata as it is and hands it to
/// the stream handler only when a line is written, so the lines look the same and a request
/// that logs nothing pays nothing for them.
///
/// A line is one line: control characters in the message and the metadata (a header, a path, a
/// shop's or Apple's text) are written escaped (`\n`, `\u{1B}`), so nothing logged can forge a
/// line or drive the terminal that reads it.
public struct DeferredMetadataLogHandler: LogHandler {
    private var stream: StreamLogHandler
    public var metadata: Logger.Metadata = [:]

    /// Lines to standard error, as `StreamLogHandler.standardError(label:)` writes them.
    public static func standardError(
        label: String, metadataProvider: Logger.MetadataProvider? = LoggingSystem.metadataProvider
    ) -> DeferredMetadataLogHandler {
        DeferredMetadataLogHandler(stream: StreamLogHandler.standardError(label: label, metadataProvider: metadataProvider))
    }

    init(stream: StreamLogHandler) {
        self.stream = stream
    }

    public var logLevel: Logger.Level {
        get { stream.logLevel }
        set { stream.logLevel = newValue }
    }

    public var metadataProvider: Logger.MetadataProvider? {
        get { stream.metadataProvider }
        set { stream.metadataProvider = newValue }
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        var event = event
        // The line's own metadata wins over the logger's, as in StreamLogHandler.
        event.metadata = LogText.escaped(metadata.merging(event.metadata ?? [:]) { _, own in own })
        event.message = Logger.Message(stringLiteral: LogText.escaped(event.message.description))
        stream.log(event: event)
    }
}

/// Text made safe for a line-oriented log.
enum LogText {
    /// `text` with every control character escaped (``TerminalText/escaped(_:)``); the same
    /// string when it has none, which is nearly always.
    static func escaped(_ text: String) -> String {
        TerminalText.escaped(text)
    }

    static func escaped(_ metadata: Logger.Metadata) -> Logger.Metadata {
        var escaped: Logger.Metadata = [:]
        for (key, value) in metadata { escaped[Self.escaped(key)] = Self.escaped(value) }
        return escaped
    }

    static func escaped(_ value: Logger.MetadataValue) -> Logger.MetadataValue {
        switch value {
        case .string(let text): .string(escaped(text))
        case .stringConvertible(let convertible): .string(escaped(convertible.description))
        case .array(let values): .array(values.map(escaped))
        case .dictionary(let dictionary): .dictionary(escaped(dictionary))
        }
    }
}
