import ArgumentParser
import Foundation
import OrchardRuntime

@main
struct Sandbox: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "orchard-sandbox",
        abstract: "Orchard's development tools: the demo, the mock Apple gateway and test tokens. Never for production.",
        subcommands: [Demo.self, MockGateway.self, Token.self]
    )
}
