import ArgumentParser
import Foundation
import NIOCore
import NIOPosix
import OrchardRuntime

@main
struct Orchard: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Orchard: a self-hosted Apple Pay on the Web backend.",
        subcommands: [
            Serve.self, DoctorCommand.self, Token.self, Domains.self, Certs.self, Payments.self, Mandates.self, Keys.self, Webhooks.self, GuardCommand.self,
        ]
    )

    /// Swift concurrency's jobs run on NIO's event loops, where the sockets are: a request, its
    /// database queries and its answer no longer wake a thread of another pool at each `await`
    /// (on a small VM each such wake-up cost more than the query). Before anything else runs.
    static func main() async {
        NIOSingletons.unsafeTryInstallSingletonPosixEventLoopGroupAsConcurrencyGlobalExecutor()
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
