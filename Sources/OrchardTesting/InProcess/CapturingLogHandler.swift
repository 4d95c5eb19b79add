import Logging
import Synchronization

/// Keeps every log record, for tests that assert what was logged.
public final class CapturingLogHandler: LogHandler, Sendable {
    /// One log record, its metadata as text.
    public struct Record: Sendable {
        public var level: Logger.Level
        public var message: String
        public var metadata: [String: String]
    }

    /// Every record logged so far, in order.
    public let records = Mutex<[Record]>([])

    public init() {}

    public var metadata: Logger.Metadata {
        get { [:] }
        set {}
    }
    public var logLevel: Logger.Level {
        get { .trace }
        set {}
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { nil }
        set {}
    }

    public func log(event: LogEvent) {
        let record = Record(
            level: event.level, message: event.message.description,
            metadata: (event.metadata ?? [:]).mapValues { "\($0)" })
        records.withLock { $0.append(record) }
    }

    /// The warnings whose message contains `text`.
    public func warnings(containing text: String) -> [Record] {
        records.withLock { $0.filter { $0.level == .warning && $0.message.contains(text) } }
    }
}
