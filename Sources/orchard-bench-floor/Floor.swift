import Foundation
import Hummingbird
import NIOCore
import NIOPosix

/// The HTTP floor for `Benchmarks/bench-http`: Hummingbird with one route and nothing else, built
/// with the same compiler and settings as Orchard, so Orchard's routes are measured against what
/// the framework itself costs on this machine. `--nio-executor` runs Swift concurrency's jobs on
/// NIO's event loops, as `orchard` does: the floor with Orchard's executor, to tell what that
/// choice costs apart from what Orchard's own code does. Usage: orchard-bench-floor PORT [--nio-executor]
@main
struct Floor {
    static func main() async throws {
        let arguments = CommandLine.arguments
        if arguments.contains("--nio-executor") {
            NIOSingletons.unsafeTryInstallSingletonPosixEventLoopGroupAsConcurrencyGlobalExecutor()
        }
        let port = arguments.count > 1 ? Int(arguments[1]) ?? 8080 : 8080
        let router = Router()
        router.get("/floor") { _, _ in "ok\n" }
        let app = Application(router: router, configuration: .init(address: .hostname("127.0.0.1", port: port)))
        try await app.runService()
    }
}
