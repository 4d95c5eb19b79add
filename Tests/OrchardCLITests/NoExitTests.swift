import Foundation
import OrchardTesting
import Testing

/// Only an executable ends the process: library code throws a typed error, so every `defer` of
/// its callers runs (the outbound clients' shutdown, the store's) before `orchard` prints the
/// line and exits.
@Suite("No exit below the command line")
struct NoExitTests {
    /// The executables' own folders, where ending the process is theirs to do.
    static let executables: Set<String> = [
        "orchard", "orchard-sandbox", "orchard-bench", "orchard-bench-floor", "EmbedFiles", "TokenFuzzer", "TokenBenchmark",
    ]

    @Test("no library target calls exit()")
    func noExit() throws {
        let sources = OrchardProcess.repositoryRoot.appendingPathComponent("Sources")
        let targets = try FileManager.default.contentsOfDirectory(atPath: sources.path).filter { !Self.executables.contains($0) }
        #expect(targets.contains("OrchardRuntime") && targets.contains("OrchardServer"))
        let call = try Regex(#"(^|[^A-Za-z0-9_.])exit\("#)
        for target in targets {
            let files = FileManager.default.enumerator(at: sources.appendingPathComponent(target), includingPropertiesForKeys: nil)
            for case let url as URL in try #require(files) where url.pathExtension == "swift" {
                for line in try String(contentsOf: url, encoding: .utf8).split(separator: "\n") {
                    let code = line.trimmingCharacters(in: .whitespaces)
                    if !code.hasPrefix("//"), code.contains(call) {
                        Issue.record("\(target)/\(url.lastPathComponent) ends the process: \(code)")
                    }
                }
            }
        }
    }
}
