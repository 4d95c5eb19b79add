import ArgumentParser
import Foundation
import OrchardCore
import OrchardRuntime
import OrchardServer

struct Serve: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Run the Orchard server.")

    @Option(help: "The configuration file (JSON).")
    var config: String = "Config/orchard.json"

    @OptionGroup var logging: LoggingOptions

    func run() async throws {
        let configuration = try ServerConfiguration.load(path: config)
        // After loading: the configuration's `log` section picks the format and level.
        let logger = logging.bootstrap(label: "orchard", configured: configuration.log)
        try await runServer(configuration, logger: logger)
    }
}
