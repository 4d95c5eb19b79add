import Foundation
import Logging
import OrchardCore
import OrchardServices

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

extension ConfigurationFile {
    /// `tracing`: where spans are exported. Absent: trace IDs only, in logs and `traceparent`.
    public struct TraceExport: Codable, Sendable {
        /// The OTLP collector; only a build with the OTel trait can export.
        public var otlp: OTLP?
        /// The `service.name` the spans carry (default `orchard`).
        public var serviceName: String?

        public init(otlp: OTLP? = nil, serviceName: String? = nil) {
            self.otlp = otlp
            self.serviceName = serviceName
        }

        enum CodingKeys: String, CodingKey, CaseIterable { case otlp, serviceName }

        public init(from decoder: any Decoder) throws {
            try StrictKeys.check(decoder, known: CodingKeys.allCases.map(\.rawValue))
            let container = try decoder.container(keyedBy: CodingKeys.self)
            otlp = try container.decodeIfPresent(OTLP.self, forKey: .otlp)
            serviceName = try container.decodeIfPresent(String.self, forKey: .serviceName)
        }

        /// `tracing.otlp`.
        public struct OTLP: Codable, Sendable {
            /// The collector's base URL (default `http://127.0.0.1:4318`); spans go to its `/v1/traces`.
            public var endpoint: String?
            /// `http/protobuf` (the default) or `http/json`.
            public var `protocol`: String?

            public init(endpoint: String? = nil, protocol: String? = nil) {
                self.endpoint = endpoint
                self.protocol = `protocol`
            }

            enum CodingKeys: String, CodingKey, CaseIterable { case endpoint, `protocol` }

            public init(from decoder: any Decoder) throws {
                try StrictKeys.check(decoder, known: CodingKeys.allCases.map(\.rawValue))
                let container = try decoder.container(keyedBy: CodingKeys.self)
                endpoint = try container.decodeIfPresent(String.self, forKey: .endpoint)
                `protocol` = try container.decodeIfPresent(String.self, forKey: .protocol)
            }
        }
    }
}

/// The `tracing.otlp` section, resolved: where and how spans are exported.
public struct TraceExportSettings: Sendable, Equatable {
    /// OTLP over HTTP: its two encodings.
    public enum OTLPProtocol: String, Sendable, CaseIterable {
        case httpProtobuf = "http/protobuf"
        case httpJSON = "http/json"
    }

    /// Where spans are posted: the endpoint's `/v1/traces`.
    public var tracesURL: String
    public var `protocol`: OTLPProtocol
    public var serviceName: String

    public init(tracesURL: String, protocol: OTLPProtocol, serviceName: String) {
        self.tracesURL = tracesURL
        self.protocol = `protocol`
        self.serviceName = serviceName
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

    static func resolveTraceExport(_ file: ConfigurationFile.TraceExport?) throws(ConfigurationError) -> TraceExportSettings? {
        guard let file else { return nil }
        let serviceName = file.serviceName ?? "orchard"
        guard !serviceName.isEmpty else { throw ConfigurationError("tracing.serviceName must not be empty") }
        guard let otlp = file.otlp else {
            if file.serviceName != nil {
                throw ConfigurationError("tracing.serviceName is set but tracing.otlp is not: nothing would be exported")
            }
            return nil
        }
        let protocolName = otlp.protocol ?? TraceExportSettings.OTLPProtocol.httpProtobuf.rawValue
        guard let otlpProtocol = TraceExportSettings.OTLPProtocol(rawValue: protocolName) else {
            throw ConfigurationError(
                "tracing.otlp.protocol must be \"http/protobuf\" or \"http/json\", not \(protocolName.debugDescription) (gRPC is not built in)"
            )
        }
        let endpoint = (otlp.endpoint ?? "http://127.0.0.1:4318").trimmingSuffix("/")
        guard let components = URLComponents(string: endpoint), components.scheme == "http" || components.scheme == "https",
            let host = components.host, !host.isEmpty, components.user == nil, components.password == nil, components.query == nil,
            components.fragment == nil
        else {
            throw ConfigurationError(
                "tracing.otlp.endpoint: \(endpoint.debugDescription) must be an http or https URL without credentials, query or fragment")
        }
        return TraceExportSettings(tracesURL: endpoint + "/v1/traces", protocol: otlpProtocol, serviceName: serviceName)
    }

    static func resolveDrainTimeout(_ server: ConfigurationFile.Server?) throws(ConfigurationError) -> Duration {
        guard let seconds = server?.drainTimeoutSeconds else { return defaultDrainTimeout }
        guard (1...300).contains(seconds) else { throw ConfigurationError("server.drainTimeoutSeconds must be 1–300") }
        return .seconds(seconds)
    }
}
