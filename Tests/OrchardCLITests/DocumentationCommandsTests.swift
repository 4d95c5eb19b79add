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
        let result = try await OrchardProcess.run(["--experimental-dump-help"], executable: executable)
        let dump = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout)) as? [String: Any])
        return leaves(try #require(dump["command"] as? [String: Any]), path: [])
    }

    static func leaves(_ command: [String: Any], path: [String]) -> [Command] {
        let path = path + [command["commandName"] as? String ?? "?"]
        let subcommands = (command["subcommands"] as? [[String: Any]] ?? []).filter { $0["commandName"] as? String != "help" }
        guard subcommands.isEmpty else { return subcommands.flatMap { leaves($0, path: path) } }
        let arguments = command["arguments"] as? [[String: Any]] ?? []
        let options = arguments.flatMap { argument in
            (argument["names"] as? [[String: Any]] ?? []).compactMap { name in
                name["kind"] as? String == "long" ? name["name"] as? String : nil
            }
        }
        return [Command(path: path.joined(separator: " "), options: options.filter { $0 != "help" && $0 != "version" })]
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
