import ArgumentParser
import Foundation
import Logging

@main
struct Orchard: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Orchard: a self-hosted Apple Pay on the Web backend.",
        subcommands: [Serve.self, Demo.self, MockGateway.self]
    )
}

/// Options shared by the commands that log.
struct LoggingOptions: ParsableArguments {
    @Option(help: "Log level: trace, debug, info, notice, warning, error, critical.")
    var logLevel: Logger.Level = ProcessInfo.processInfo.environment["LOG_LEVEL"].flatMap(Logger.Level.init(rawValue:)) ?? .info

    func bootstrap(label: String) -> Logger {
        LoggingSystem.bootstrap { StreamLogHandler.standardError(label: $0) }
        var logger = Logger(label: label)
        logger.logLevel = logLevel
        return logger
    }
}

extension Logger.Level: @retroactive ExpressibleByArgument {}

/// Prints one line to standard error and exits with status 1.
func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("orchard: \(message)\n".utf8))
    exit(1)
}

/// Writes a line to standard output unbuffered, so scripts reading a pipe see it at once.
func say(_ text: String) {
    FileHandle.standardOutput.write(Data((text + "\n").utf8))
}
