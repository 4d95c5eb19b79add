import ArgumentParser
import Foundation
import OrchardConfiguration
import OrchardCore
import OrchardRuntime
import OrchardServer
import OrchardServices

struct Migrate: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Bring the configured store's schema to this Orchard's, print what was applied, and exit.",
        discussion: """
            For a deployment's migration step (a Kubernetes Job, a systemd ExecStartPre) before \
            the new servers start; orchard serve migrates too, so running it is never required. \
            Reads only the configuration's store section. PostgreSQL: every numbered migration the \
            database lacks runs in one transaction under the same lock as serve's, one `applied` \
            line each; a schema written by a newer Orchard is refused (status 1), as serve refuses \
            it. SQLite: the tables, columns and indexes missing from the state folder's database \
            are created, one `created` line each. A second run applies nothing and says so.
            """)

    @Option(help: ArgumentHelp("The configuration file (JSON).", valueName: "file"))
    var config: String = "Config/orchard.json"

    func run() async throws {
        let lines: [String]
        do {
            let file = try ConfigurationFile.load(path: config)
            let folder = URL(fileURLWithPath: config).deletingLastPathComponent().path
            lines = try await migrateStore(file, folder: folder, environment: ProcessInfo.processInfo.environment)
        } catch {
            throw CommandFailure(error.message)
        }
        say(lines.map { TerminalText.escaped($0) }.joined(separator: "\n"))
    }
}
