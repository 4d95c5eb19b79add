import Foundation
import Hummingbird

/// The HTTP floor for `scripts/bench-http`: Hummingbird with one route and nothing else, built
/// with the same compiler and settings as Orchard, so Orchard's routes are measured against what
/// the framework itself costs on this machine. Usage: orchard-bench-floor PORT
@main
struct Floor {
    static func main() async throws {
        let arguments = CommandLine.arguments
        let port = arguments.count > 1 ? Int(arguments[1]) ?? 8080 : 8080
        let router = Router()
        router.get("/floor") { _, _ in "ok\n" }
        let app = Application(router: router, configuration: .init(address: .hostname("127.0.0.1", port: port)))
        try await app.runService()
    }
}
