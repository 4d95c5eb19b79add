import Foundation
import OrchardRuntime
import OrchardTesting
import Testing

/// A newcomer's first commands: every command of both executables, as their configurations list
/// them, answers `--help`, `-h` and `help <command>` with its help on standard output and status 0;
/// `--version` prints the release; a command's own failure is still one `orchard:` line and status 1.
@Suite("Help and version")
struct HelpTests {
    static let executables = [OrchardProcess.orchard, OrchardProcess.sandbox]

    /// What is wrong with `result` as the help of `command` asked for with `arguments`; empty when nothing is.
    static func problems(
        status: Int32, help: String, stderr: String, of command: CommandTree.Command, asked arguments: [String]
    ) -> [String] {
        let typed = ([command.words[0]] + arguments).joined(separator: " ")
        var problems: [String] = []
        if status != 0 { problems.append("\(typed): status \(status), stderr: \(stderr.prefix(400))") }
        if !help.contains("USAGE: \(command.path)") { problems.append("\(typed): no usage line for \(command.path)") }
        if !help.contains("OVERVIEW: ") { problems.append("\(typed): no overview (the command's abstract)") }
        for option in command.options where !help.contains("--\(option)") {
            problems.append("\(typed): --\(option) is not in the help")
        }
        return problems
    }

    @Test("every command answers --help, -h and help <command> with its usage and options, status 0")
    func everyCommandHelps() async throws {
        var commands: [(URL, CommandTree.Command)] = []
        for executable in Self.executables {
            commands += try await CommandTree.commands(of: executable).map { (executable, $0) }
        }
        #expect(commands.count > 30, "the executables' commands were read (\(commands.count))")
        #expect(commands.contains { $0.1.path == "orchard-sandbox demo" && $0.1.options.contains("processor") })
        #expect(commands.contains { $0.1.path == "orchard certs rotate" && $0.1.hasSubcommands })
        let problems = try await withThrowingTaskGroup(of: [String].self) { group in
            var next = commands.makeIterator()
            func ask() -> Bool {
                guard let (executable, command) = next.next() else { return false }
                group.addTask {
                    let words = Array(command.words.dropFirst())
                    var problems: [String] = []
                    for arguments in [words + ["--help"], words + ["-h"], ["help"] + words] {
                        let result = try await OrchardProcess.run(arguments, executable: executable)
                        problems += Self.problems(
                            status: result.status, help: String(decoding: result.stdout, as: UTF8.self), stderr: result.stderr,
                            of: command, asked: arguments)
                    }
                    return problems
                }
                return true
            }
            // Four at a time: each is a process start, and the machine has two cores.
            var running = 0
            while running < 4, ask() { running += 1 }
            var all: [String] = []
            while let found = try await group.next() {
                all += found
                _ = ask()
            }
            return all
        }
        for problem in problems.sorted() { Issue.record("\(problem)") }
    }

    @Test("a missing usage line, overview or option is found")
    func checkCanFail() {
        let command = CommandTree.Command(words: ["orchard", "serve"], options: ["config"], hasSubcommands: false)
        let broken = Self.problems(
            status: 1, help: "", stderr: "orchard: CommandError(commandStack: [], parserError: helpRequested)", of: command,
            asked: ["serve", "--help"])
        #expect(broken.count == 4)
        let good = Self.problems(
            status: 0, help: "OVERVIEW: Serve.\n\nUSAGE: orchard serve [--config <config>]\n", stderr: "", of: command,
            asked: ["serve", "--help"])
        #expect(good.isEmpty)
    }

    @Test("--version prints the release, for both executables")
    func version() async throws {
        for executable in Self.executables {
            let result = try await OrchardProcess.run(["--version"], executable: executable)
            #expect(result.status == 0, "\(executable.lastPathComponent) --version: \(result.stderr)")
            #expect(String(decoding: result.stdout, as: UTF8.self) == Release.version + "\n")
        }
    }

    @Test("a command's own failure is one orchard: line and status 1; a wrong option, the usage and status 64")
    func failures() async throws {
        let missing = try await OrchardProcess.run(["serve", "--config", "/nonexistent/orchard.json"])
        #expect(missing.status == 1)
        #expect(missing.stderr.hasPrefix("orchard: ") && missing.stderr.contains("/nonexistent/orchard.json"), "\(missing.stderr)")
        let wrong = try await OrchardProcess.run(["serve", "--no-such-option"])
        #expect(wrong.status == 64)
        #expect(
            wrong.stderr.contains("Unknown option '--no-such-option'") && wrong.stderr.contains("Usage: orchard serve"), "\(wrong.stderr)")
    }
}
