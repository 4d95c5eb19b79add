import ArgumentParser
import Foundation
import OrchardRuntime

@main
struct Sandbox: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "orchard-sandbox",
        abstract: "Orchard's development tools: the demo, the mock Apple gateway and test tokens. Never for production.",
        version: Release.version,
        subcommands: [Demo.self, MockGateway.self, Token.self]
    )

    /// As `orchard`: a failure is `orchard-sandbox: <message>` on standard error and status 1.
    static func main() async {
        switch await runCommandLine() {
        case .succeeded:
            return
        case .failed(let line):
            FileHandle.standardError.write(Data(line.utf8))
            exit(withError: ExitCode.failure)
        case .argumentParser(let error):
            exit(withError: error)
        }
    }
}
