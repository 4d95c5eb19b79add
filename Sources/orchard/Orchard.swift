import ArgumentParser
import Foundation
import Logging

@main
struct Orchard: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Orchard: a self-hosted Apple Pay on the Web backend.",
        subcommands: [Serve.self, Demo.self, MockGateway.self, Token.self, Domains.self, Certs.self, Payments.self]
    )
}

/// Options shared by the commands that log.
struct LoggingOptions: ParsableArguments {
    @Option(help: "Log level: trace, debug, info, notice, warning, error, critical (default: LOG_LEVEL or info).")
    var logLevel: String = ProcessInfo.processInfo.environment["LOG_LEVEL"] ?? "info"

    func validate() throws {
        guard Logger.Level(rawValue: logLevel) != nil else { throw ValidationError("unknown log level \(logLevel)") }
    }

    func bootstrap(label: String) -> Logger {
        LoggingSystem.bootstrap { StreamLogHandler.standardError(label: $0) }
        var logger = Logger(label: label)
        logger.logLevel = Logger.Level(rawValue: logLevel) ?? .info
        return logger
    }
}

/// Prints one line to standard error and exits with status 1.
func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("orchard: \(message)\n".utf8))
    exit(1)
}

/// Writes a line to standard output unbuffered, so scripts reading a pipe see it at once.
func say(_ text: String) {
    FileHandle.standardOutput.write(Data((text + "\n").utf8))
}
