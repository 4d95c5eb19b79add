import Foundation

#if canImport(Glibc)
    import Glibc
#endif

extension ChildProcess {
    /// Signals that only a crash sends: a trap (Swift's `fatalError`, a failed precondition, an
    /// overflow), an abort, a bad memory access. Tests send SIGTERM, SIGINT and SIGKILL themselves.
    static let crashSignals: [Int32: String] = [
        SIGABRT: "SIGABRT", SIGSEGV: "SIGSEGV", SIGILL: "SIGILL", SIGTRAP: "SIGTRAP", SIGBUS: "SIGBUS", SIGFPE: "SIGFPE",
    ]
    static let otherSignals: [Int32: String] = [
        SIGKILL: "SIGKILL", SIGTERM: "SIGTERM", SIGINT: "SIGINT", SIGHUP: "SIGHUP", SIGPIPE: "SIGPIPE", SIGQUIT: "SIGQUIT",
    ]

    /// "exit status 1", or "killed by SIGABRT" for 128 + a signal's number (as ``wait()`` returns).
    public static func describe(_ status: Int32) -> String {
        guard status > 128 else { return "exit status \(status)" }
        let signal = status - 128
        return "killed by \(crashSignals[signal] ?? otherSignals[signal] ?? "signal \(signal)")"
    }

    /// Whether `status` (as ``wait()`` returns it) is a crash: killed by one of ``crashSignals``.
    public static func isCrash(_ status: Int32) -> Bool {
        status > 128 && crashSignals[status - 128] != nil
    }

    /// The last `count` lines of what the child wrote to stderr: captured, or its output file.
    public func stderrTail(lines count: Int = 40) -> String {
        var text = String(decoding: capturedStderrBytes, as: UTF8.self)
        if text.isEmpty, let file = outputPath, let written = try? String(contentsOfFile: file, encoding: .utf8) {
            text = written
        }
        return text.split(separator: "\n", omittingEmptySubsequences: false).suffix(count).joined(separator: "\n")
    }

    /// The crash's own words in the child's stderr: the runtime's message (`Fatal error: …`) and the
    /// crashed thread's first frames, which Swift's backtrace prints long before its last 40 lines;
    /// and the `context` lines the child wrote just before it (its last log lines).
    public func crashMessage(lines count: Int = 24, context: Int = 60) -> (message: String, before: String)? {
        var text = String(decoding: capturedStderrBytes, as: UTF8.self)
        if text.isEmpty, let file = outputPath, let written = try? String(contentsOfFile: file, encoding: .utf8) {
            text = written
        }
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
        let markers = ["Fatal error", "Precondition failed", "Assertion failed", "Program crashed", "crashed:"]
        guard let first = lines.firstIndex(where: { line in markers.contains { line.contains($0) } }) else { return nil }
        return (
            lines[first..<min(lines.count, first + count)].joined(separator: "\n"),
            lines[max(0, first - context)..<first].joined(separator: "\n")
        )
    }

    /// Written to the test process's stderr (the test log) once, when the child crashed: the status
    /// alone ("134") loses the crash's own message, which is what finds its cause.
    func reportCrash(_ status: Int32) {
        guard Self.isCrash(status) else { return }
        let report: String
        if let crash = crashMessage() {
            // Swift's backtrace fills the tail: what the child logged before it says what it was doing.
            report = """
                ‼ \(commandLine) (pid \(pid)) was \(Self.describe(status)); its crash:
                \(crash.message)
                what it wrote just before:
                \(crash.before)
                ‼ end of \(commandLine)'s stderr

                """
        } else {
            report = """
                ‼ \(commandLine) (pid \(pid)) was \(Self.describe(status)); the last 40 lines of its stderr:
                \(stderrTail())
                ‼ end of \(commandLine)'s stderr

                """
        }
        FileHandle.standardError.write(Data(report.utf8))
    }
}
