import ArgumentParser
import Foundation
import OrchardConfiguration
import OrchardCore
import OrchardRuntime
import OrchardServer
import OrchardServices

struct Serve: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run the server: merchant validation, the checkout page, payments and the payments API.",
        discussion: """
            Reads the configuration once, refuses to start (one line, status 1) if any certificate, \
            key or setting is wrong, then listens on server.host:server.port (127.0.0.1:8080 by \
            default) until SIGTERM or SIGINT, which drain it gracefully. Put it behind a reverse \
            proxy that terminates TLS and forwards Host; /health answers the load balancer. \
            `orchard doctor` checks the same configuration without serving.
            """)

    @Option(help: ArgumentHelp("The configuration file (JSON).", valueName: "file"))
    var config: String = "Config/orchard.json"

    @OptionGroup var logging: LoggingOptions

    func run() async throws {
        let configuration = try ServerConfiguration.load(path: config)
        // After loading: the configuration's `log` section picks the format and level, its
        // `tracing` section the tracer (swift-otel's exporter in a build with the OTel trait).
        let (logger, traceExporter) = try logging.bootstrap(label: "orchard", configuration: configuration)
        try await runServer(configuration, logger: logger, traceExporter: traceExporter)
    }
}
