import ArgumentParser
import Foundation
import OrchardConfiguration
import OrchardRuntime
import OrchardServices

@main
struct Orchard: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Orchard: a self-hosted Apple Pay on the Web backend.",
        discussion: """
            Orchard validates merchants with Apple, serves the checkout page and each domain's \
            association file, and authorizes Apple Pay tokens through the merchant's processor. \
            A first setup: `orchard certs csr` for Apple's two certificates, a configuration file \
            (docs/configuration.md), `orchard doctor` until every check passes, then `orchard serve`. \
            To try it first with no Apple account: `orchard-sandbox demo`.
            """,
        version: Release.version,
        subcommands: [
            Serve.self, Migrate.self, DoctorCommand.self, Token.self, Domains.self, Certs.self, Payments.self, Mandates.self, Keys.self,
            Webhooks.self,
            GuardCommand.self,
        ]
    )

    /// Swift concurrency runs on its default executor. The API's requests run on their
    /// connection's event loop (`EventLoopExecutorMiddleware`): installing NIO's loops as the
    /// global executor did that for every request, and cost static files a tenth of their rate.
    static func main() async {
        switch await runCommandLine() {
        case .succeeded:
            return
        case .failed(let line):
            // The only place a failure becomes a line and status 1, after the command's own clean-up.
            FileHandle.standardError.write(Data(line.utf8))
            exit(withError: ExitCode.failure)
        case .argumentParser(let error):
            exit(withError: error)
        }
    }
}
