import Foundation
import Logging
import OrchardCore

extension ConfigurationFile {
    /// `metrics`: the Prometheus listener, apart from the public port. Absent: no listener.
    public struct Metrics: Codable, Sendable {
        /// Default `127.0.0.1`; any other address is logged as a warning at startup.
        public var host: String?
        /// Default 9464.
        public var port: Int?
        /// How often the gauges read from the store (payments by state, webhook backlog) are refreshed (default 15).
        public var refreshIntervalSeconds: Int?

        public init(host: String? = nil, port: Int? = nil, refreshIntervalSeconds: Int? = nil) {
            self.host = host
            self.port = port
            self.refreshIntervalSeconds = refreshIntervalSeconds
        }

        enum CodingKeys: String, CodingKey, CaseIterable { case host, port, refreshIntervalSeconds }

        public init(from decoder: any Decoder) throws {
            try StrictKeys.check(decoder, known: CodingKeys.allCases.map(\.rawValue))
            let container = try decoder.container(keyedBy: CodingKeys.self)
            host = try container.decodeIfPresent(String.self, forKey: .host)
            port = try container.decodeIfPresent(Int.self, forKey: .port)
            refreshIntervalSeconds = try container.decodeIfPresent(Int.self, forKey: .refreshIntervalSeconds)
        }
    }

    /// `log`: how `orchard serve` writes its log lines to standard error.
    public struct Log: Codable, Sendable {
        /// `text` (the default) or `json`: one JSON object per line.
        public var format: String?
        /// trace, debug, info (the default), notice, warning, error or critical.
        public var level: String?

        public init(format: String? = nil, level: String? = nil) {
            self.format = format
            self.level = level
        }

        enum CodingKeys: String, CodingKey, CaseIterable { case format, level }

        public init(from decoder: any Decoder) throws {
            try StrictKeys.check(decoder, known: CodingKeys.allCases.map(\.rawValue))
            let container = try decoder.container(keyedBy: CodingKeys.self)
            format = try container.decodeIfPresent(String.self, forKey: .format)
            level = try container.decodeIfPresent(String.self, forKey: .level)
        }
    }
}

/// Where `/metrics` is served.
public struct MetricsListener: Sendable, Equatable {
    public var host: String
    public var port: Int
    /// How often the store's gauges are read.
    public var refreshInterval: Duration

    public init(host: String, port: Int, refreshInterval: Duration) {
        self.host = host
        self.port = port
        self.refreshInterval = refreshInterval
    }

    /// Whether only this machine can reach it (127.0.0.0/8, ::1 or localhost).
    public var isLoopback: Bool {
        let host = host.lowercased()
        return host == "localhost" || host == "::1" || host.hasPrefix("127.")
    }
}

/// Log lines: plain text or one JSON object per line.
public enum LogFormat: String, Sendable, CaseIterable {
    case text, json
}

/// The `log` section, resolved; nil fields leave the choice to the command line and its defaults.
public struct LogSettings: Sendable, Equatable {
    public var format: LogFormat?
    public var level: Logger.Level?

    public init(format: LogFormat? = nil, level: Logger.Level? = nil) {
        self.format = format
        self.level = level
    }
}

extension ServerConfiguration {
    /// The default `server.drainTimeoutSeconds`: below the 30 s most orchestrators wait before SIGKILL.
    public static let defaultDrainTimeout = Duration.seconds(25)

    static func resolveMetrics(_ file: ConfigurationFile.Metrics?, serverPort: Int) throws(ConfigurationError) -> MetricsListener? {
        guard let file else { return nil }
        let refresh = file.refreshIntervalSeconds ?? 15
        let listener = MetricsListener(host: file.host ?? "127.0.0.1", port: file.port ?? 9464, refreshInterval: .seconds(refresh))
        guard !listener.host.isEmpty, (0...65535).contains(listener.port), (1...3600).contains(refresh) else {
            throw ConfigurationError("metrics: host must not be empty, port must be 0–65535 and refreshIntervalSeconds 1–3600")
        }
        guard listener.port == 0 || listener.port != serverPort else {
            throw ConfigurationError("metrics.port \(listener.port) is server.port too: give the metrics listener a port of its own")
        }
        return listener
    }

    static func resolveLog(_ file: ConfigurationFile.Log?) throws(ConfigurationError) -> LogSettings {
        var settings = LogSettings()
        if let format = file?.format {
            guard let value = LogFormat(rawValue: format) else {
                throw ConfigurationError("log.format must be \"text\" or \"json\", not \(format.debugDescription)")
            }
            settings.format = value
        }
        if let level = file?.level {
            guard let value = Logger.Level(rawValue: level) else {
                throw ConfigurationError(
                    "log.level must be one of \(Logger.Level.allCases.map(\.rawValue).joined(separator: ", ")), not \(level.debugDescription)"
                )
            }
            settings.level = value
        }
        return settings
    }

    static func resolveDrainTimeout(_ server: ConfigurationFile.Server?) throws(ConfigurationError) -> Duration {
        guard let seconds = server?.drainTimeoutSeconds else { return defaultDrainTimeout }
        guard (1...300).contains(seconds) else { throw ConfigurationError("server.drainTimeoutSeconds must be 1–300") }
        return .seconds(seconds)
    }
}
