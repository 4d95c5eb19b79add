import Logging
import OrchardConfiguration
import OrchardCore
import OrchardServer
import OrchardServices
import ServiceLifecycle
import Tracing

#if OTel
    import OTel
#endif

/// Whether this build can export spans: built with the OTel trait (`swift build --traits OTel`).
public let buildExportsTraces: Bool = {
    #if OTel
        return true
    #else
        return false
    #endif
}()

extension ConfigurationError {
    /// A `tracing.otlp` section in a build that cannot export.
    static let traceExportNotBuilt = ConfigurationError(
        "tracing.otlp: this orchard was built without the OTel trait: build with --traits OTel to export spans, or remove the section")
}

extension ServerConfiguration {
    /// Refuses a `tracing.otlp` section this build cannot honour: without the OTel trait it would
    /// be ignored, and the operator would look for spans that never leave.
    public func checkTraceExportIsBuilt() throws(ConfigurationError) {
        if traceExport != nil && !buildExportsTraces { throw .traceExportNotBuilt }
    }
}

/// `orchard doctor`'s word on `tracing.otlp`, nil without it: a build without the OTel trait
/// cannot export, and `orchard serve` would refuse the section.
public func traceExportDoctorCheck(_ file: ConfigurationFile) -> DoctorCheck? {
    guard let otlp = file.tracing?.otlp else { return nil }
    let endpoint = otlp.endpoint ?? "http://127.0.0.1:4318"
    return buildExportsTraces
        ? DoctorCheck(subject: "tracing", check: "OTLP", passed: true, detail: "spans are exported to \(endpoint) (swift-otel)")
        : DoctorCheck(subject: "tracing", check: "OTLP", passed: false, detail: ConfigurationError.traceExportNotBuilt.message)
}

extension LoggingOptions {
    /// `orchard serve`'s bootstrap: logging as ``bootstrap(label:configured:)`` does, and the
    /// process's one tracer. Without `tracing.otlp`, Orchard's own W3C tracer (IDs only, nothing
    /// returned to run). With it (a build with the OTel trait), swift-otel's tracer and nothing
    /// else of swift-otel: its OTLP/HTTP span exporter, whose service is returned to run beside the
    /// server (it batches, sends, and flushes at shutdown); log lines take their `trace_id` and
    /// `span_id` from its spans. swift-otel reads its settings from `tracing`, never from OTEL_*
    /// environment variables, but for OTEL_LOG_LEVEL (its own diagnostics' level), which it always reads.
    public func bootstrap(label: String, configuration: ServerConfiguration) throws(ConfigurationError) -> (
        logger: Logger, traceExporter: (any Service)?
    ) {
        guard let export = configuration.traceExport else {
            return (bootstrap(label: label, configured: configuration.log), nil)
        }
        #if OTel
            let logger = bootstrapLogging(
                label: label, configured: configuration.log, metadataProvider: OTel.makeLoggingMetadataProvider())
            do {
                return (logger, try OTelTraceExport.bootstrap(export, logger: logger))
            } catch {
                throw ConfigurationError("tracing.otlp: swift-otel refused the settings: \(error)")
            }
        #else
            _ = export
            throw .traceExportNotBuilt
        #endif
    }
}

#if OTel
    enum OTelTraceExport {
        /// Bootstraps swift-otel's tracer (traces only: Orchard keeps its own logging and metrics)
        /// exporting to `settings`; returns the exporter's service.
        static func bootstrap(_ settings: TraceExportSettings, logger: Logger) throws -> some Service {
            var configuration = OTel.Configuration.default
            configuration.serviceName = settings.serviceName
            configuration.diagnosticLogger = .custom(logger)
            configuration.diagnosticLogLevel = diagnosticLevel(logger.logLevel)
            configuration.propagators = [.traceContext]
            configuration.logs.enabled = false
            configuration.metrics.enabled = false
            configuration.traces.enabled = true
            configuration.traces.exporter = .otlp
            configuration.traces.otlpExporter.endpoint = settings.tracesURL
            configuration.traces.otlpExporter.protocol = settings.protocol == .httpJSON ? .httpJSON : .httpProtobuf
            // An empty environment: no OTEL_* variable overrides what the configuration file says.
            return try OTel.bootstrap(configuration: configuration, environment: [:])
        }

        static func diagnosticLevel(_ level: Logger.Level) -> OTel.Configuration.LogLevel {
            switch level {
            case .trace: .trace
            case .debug: .debug
            case .info, .notice: .info
            case .warning: .warning
            case .error, .critical: .error
            }
        }
    }
#endif
