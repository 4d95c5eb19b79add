import Foundation
import OrchardTesting
import Testing

/// Runs a page's `sh` block as a reader would paste it: `bash -euo pipefail`, the built `orchard`
/// and `orchard-sandbox` on the `PATH`, the placeholders the page names in the environment, and the
/// example's address and merchant pointed at the live server (docs/README.md, "How these pages are
/// tested", says which).
struct DocumentationShell {
    /// The folder blocks run in (`Config/orchard.json` there is the live server's configuration).
    var directory: URL
    /// The live server's address, for `http://127.0.0.1:8080` in a block and the admin commands' `--server`.
    var server: String
    /// The live server's merchant, for the example's `merchant.com.example.shop`.
    var merchant: String?
    /// The placeholders (`ORCHARD_API_KEY`, `PAYMENT`, `ID`, `MANDATE`, `ORCHARD_ADMIN_TOKEN`…).
    var variables: [String: String] = [:]

    /// The block's text as it runs: the example's address and merchant replaced by the live
    /// server's, and `ORCHARD_ADMIN_TOKEN=…` given the token.
    func script(_ block: DocumentationBlocks.Block) -> String {
        var text = block.text.replacingOccurrences(of: "http://127.0.0.1:8080", with: server)
        if let merchant { text = text.replacingOccurrences(of: DocumentationConfigurationBlocks.merchant, with: merchant) }
        text = Self.datesInTheFuture(text)
        // A bare ID between spaces (`orchard payments resolve ID …`) is the variable's value.
        if variables["ID"] != nil { text = text.replacingOccurrences(of: " ID ", with: " \"$ID\" ") }
        if let token = variables["ORCHARD_ADMIN_TOKEN"] {
            text = text.replacingOccurrences(of: "ORCHARD_ADMIN_TOKEN=…", with: "ORCHARD_ADMIN_TOKEN='\(token)'")
        }
        // The admin API's commands default to http://127.0.0.1:8080: the live server is elsewhere.
        let preamble = """
            orchard() {
                case "$1" in
                payments | mandates | domains) command orchard "$@" --server '\(server)' ;;
                *) command orchard "$@" ;;
                esac
            }

            """
        return preamble + text
    }

    /// `text` with each date's year (`"2027-01-01T…`) made next year's: the pages' examples start
    /// agreements on a date that was ahead when written, and a server refuses one in the past.
    static func datesInTheFuture(_ text: String, now: Date = Date()) -> String {
        let next = Calendar(identifier: .gregorian).component(.year, from: now) + 1
        return text.replacing(#/"20\d\d-(\d\d-\d\dT)/#) { "\"\(next)-\($0.1)" }
    }

    /// Runs `block`; throws with its place, text and both streams unless it exits 0 and prints no
    /// `"error"` (curl without `-f` exits 0 on a 400: the body says it failed).
    @discardableResult
    func run(_ block: DocumentationBlocks.Block) async throws -> String {
        var environment = ProcessInfo.processInfo.environment.merging(variables) { $1 }
        environment["PATH"] = OrchardProcess.orchard.deletingLastPathComponent().path + ":" + (environment["PATH"] ?? "/usr/bin:/bin")
        let result = try await OrchardProcess.run(
            ["-euo", "pipefail", "-c", script(block)], environment: environment, executable: URL(fileURLWithPath: "/bin/bash"),
            currentDirectory: directory)
        // What curl wrote to a file (`-o openapi.json`) is an answer too: a JSON object, not an error.
        let written = block.text.matches(of: #/ -o ([A-Za-z0-9._-]+)/#).map {
            (try? Data(contentsOf: directory.appendingPathComponent(String($0.1)))) ?? Data()
        }
        let writtenFailed = written.contains {
            guard let object = try? JSONSerialization.jsonObject(with: $0) as? [String: Any] else { return true }
            return object["error"] != nil
        }
        let stdout = String(decoding: result.stdout, as: UTF8.self)
        if result.status != 0 || stdout.contains("\"error\"") || writtenFailed {
            throw DocumentationBlockFailure(
                """
                \(block) did not work (\(result.exit)):
                \(block.text)--- stdout:
                \(stdout)
                --- stderr:
                \(result.stderr)
                """)
        }
        return stdout
    }

    /// The JSON object a block printed (a curl call's answer), if it printed one.
    static func object(_ output: String) -> [String: Any]? {
        try? JSONSerialization.jsonObject(with: Data(output.utf8)) as? [String: Any]
    }
}
