import Foundation
import OrchardTesting
import Testing

/// The commands an executable has, read from its own configuration through ArgumentParser's
/// `--experimental-dump-help` (never a hand-kept list), with the long options each one takes.
struct CommandTree {
    /// One command as typed (`orchard payments settle`).
    struct Command: Equatable {
        /// The executable's name first, then each subcommand's.
        var words: [String]
        /// Long option names without their dashes, less ArgumentParser's own `help` and `version`.
        var options: [String]
        /// Whether it only groups other commands.
        var hasSubcommands: Bool

        var path: String { words.joined(separator: " ") }
    }

    /// Every command of `executable`, the root first, ArgumentParser's own `help` left out.
    static func commands(of executable: URL) async throws -> [Command] {
        let result = try await OrchardProcess.run(["--experimental-dump-help"], executable: executable)
        let dump = try JSONSerialization.jsonObject(with: Data(result.stdout)) as? [String: Any]
        let root = try #require(dump?["command"] as? [String: Any], "\(executable.lastPathComponent) dumped no command tree")
        return walk(root, above: [])
    }

    static func walk(_ command: [String: Any], above: [String]) -> [Command] {
        let words = above + [command["commandName"] as? String ?? "?"]
        let subcommands = (command["subcommands"] as? [[String: Any]] ?? []).filter { $0["commandName"] as? String != "help" }
        let arguments = command["arguments"] as? [[String: Any]] ?? []
        let options = arguments.flatMap { argument in
            (argument["names"] as? [[String: Any]] ?? []).compactMap { name in
                name["kind"] as? String == "long" ? name["name"] as? String : nil
            }
        }
        let this = Command(
            words: words, options: options.filter { $0 != "help" && $0 != "version" }, hasSubcommands: !subcommands.isEmpty)
        return [this] + subcommands.flatMap { walk($0, above: words) }
    }
}
