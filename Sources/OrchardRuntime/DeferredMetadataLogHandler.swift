import Logging

/// swift-log's `StreamLogHandler`, minus one cost on every request: that handler renders all
/// of its metadata into text each time any of it is set, and Hummingbird sets a request ID on
/// every request's logger, logged or not. This one keeps the metadata as it is and hands it to
/// the stream handler only when a line is written, so the lines look the same and a request
/// that logs nothing pays nothing for them.
public struct DeferredMetadataLogHandler: LogHandler {
    private var stream: StreamLogHandler
    public var metadata: Logger.Metadata = [:]

    /// Lines to standard error, as `StreamLogHandler.standardError(label:)` writes them.
    public static func standardError(label: String) -> DeferredMetadataLogHandler {
        DeferredMetadataLogHandler(stream: StreamLogHandler.standardError(label: label))
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
        event.metadata = metadata.merging(event.metadata ?? [:]) { _, own in own }
        stream.log(event: event)
    }
}
