import ArgumentParser
import Foundation
import NIOCore
import NIOPosix

@main
struct Orchard: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Orchard: a self-hosted Apple Pay on the Web backend.",
        subcommands: [Serve.self, DoctorCommand.self, Token.self, Domains.self, Certs.self, Payments.self, Mandates.self, Keys.self, Webhooks.self]
    )

    /// Swift concurrency's jobs run on NIO's event loops, where the sockets are: a request, its
    /// database queries and its answer no longer wake a thread of another pool at each `await`
    /// (on a small VM each such wake-up cost more than the query). Before anything else runs.
    static func main() async {
        NIOSingletons.unsafeTryInstallSingletonPosixEventLoopGroupAsConcurrencyGlobalExecutor()
        await main(nil)
    }
}
