import Foundation
import OrchardTesting
import Testing

/// docs/commands.md names every command of `orchard` and `orchard-sandbox` and every option
/// they take, as the executables themselves describe them (`--experimental-dump-help`).
@Suite("Documentation commands")
struct DocumentationCommandsTests {
    /// A command to run, as typed (`orchard payments settle`), with its long options.
    struct Command: Equatable {
        var path: String
        var options: [String]
    }

    /// The commands an executable runs (those without subcommands of their own), from its own help.
    static func commands(of executable: URL) async throws -> [Command] {
        try await CommandTree.commands(of: executable).filter { !$0.hasSubcommands }.map {
            Command(path: $0.path, options: $0.options)
        }
    }

    /// What `page` leaves out of `commands`: a command not at the start of a table row, an option not named.
    static func missing(_ commands: [Command], in page: String) -> [String] {
        var missing: [String] = []
        for command in commands {
            if !page.contains("| `\(command.path)") { missing.append(command.path) }
            for option in command.options where !page.contains("--\(option)") { missing.append("\(command.path) --\(option)") }
        }
        return missing
    }

    @Test("docs/commands.md has a row for every command and names every option")
    func everyCommand() async throws {
        let page = try String(
            contentsOf: OrchardProcess.repositoryRoot.appendingPathComponent("docs/commands.md"), encoding: .utf8)
        let commands = try await Self.commands(of: OrchardProcess.orchard) + Self.commands(of: OrchardProcess.sandbox)
        #expect(commands.count > 20, "the executables' commands were read (\(commands.count))")
        #expect(commands.contains(Command(path: "orchard payments resolve", options: ["server", "token-file", "state"])))
        for gap in Self.missing(commands, in: page) { Issue.record("docs/commands.md does not name \(gap)") }
    }

    @Test("a missing command or option is found")
    func checkCanFail() {
        let commands = [Command(path: "orchard keys revoke", options: ["config"]), Command(path: "orchard serve", options: ["log-level"])]
        #expect(
            Self.missing(commands, in: "| `orchard keys revoke key_…` | … |\n`--config FILE`") == [
                "orchard serve", "orchard serve --log-level",
            ])
    }
}
