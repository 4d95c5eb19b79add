import ArgumentParser

/// A command's failure in one line a user can act on. Library code throws it (or its own typed
/// error); only the executable prints `orchard: <message>` (`orchard-sandbox: …`) on standard error
/// and exits with status 1.
public struct CommandFailure: Error, Sendable, CustomStringConvertible {
    public var message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}

/// How a command line ended, for the executable to report: nothing on success, one line and
/// status 1 on a failure, ArgumentParser's own report for its errors (usage, help, an exit code).
public enum CommandOutcome: Sendable {
    case succeeded
    /// `orchard: <message>` (the root command's name first), with its newline.
    case failed(line: String)
    /// To hand to ArgumentParser's `exit(withError:)`.
    case argumentParser(any Error)
}

extension AsyncParsableCommand {
    /// Parses the command line, runs the command it names and says how it ended; prints nothing
    /// and never exits, so every `defer` of the command has run when it returns.
    public static func runCommandLine(_ arguments: [String]? = nil) async -> CommandOutcome {
        var command: any ParsableCommand
        do {
            command = try await asyncParseAsRoot(arguments)
        } catch {
            return .argumentParser(error)
        }
        // `--help`, `-h` and `help <subcommand>` parse to ArgumentParser's own help command, whose
        // run() throws its help screen as an error: whatever a command outside this tool's own
        // tree throws is ArgumentParser's to print.
        let ownCommand = commandTree.contains { ObjectIdentifier($0) == ObjectIdentifier(type(of: command)) }
        do {
            if var asyncCommand = command as? any AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
            return .succeeded
        } catch let error where !ownCommand || error is ExitCode || error is CleanExit {
            return .argumentParser(error)
        } catch {
            // A ValidationError thrown by run() is what the command found (a missing token, an
            // unreadable file), not a wrong command line: one line too, never the usage and 64.
            let message = (error as? ValidationError)?.message ?? "\(error)"
            // A failure often quotes outside text (a server's message, a file's contents): escaped,
            // so the one line stays one line and drives no terminal.
            return .failed(line: "\(_commandName): \(TerminalText.escaped(message))\n")
        }
    }
}

extension ParsableCommand {
    /// This command and every command below it, as their configurations list them.
    static var commandTree: [any ParsableCommand.Type] {
        [self] + configuration.subcommands.flatMap { $0.commandTree }
    }
}
