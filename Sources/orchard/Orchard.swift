import ArgumentParser
import Foundation

@main
struct Orchard: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Orchard: a self-hosted Apple Pay on the Web backend.",
        subcommands: [Serve.self, DoctorCommand.self, Token.self, Domains.self, Certs.self, Payments.self, Keys.self, Webhooks.self]
    )
}
