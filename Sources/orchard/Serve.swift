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
        let logger = logging.bootstrap(label: "orchard")
        let configuration: ServerConfiguration
        do {
            configuration = try ServerConfiguration.load(path: config)
        } catch {
            fail(error.message)
        }
        try await runServer(configuration, logger: logger)
    }
}
