import Foundation
import OrchardTesting
import Testing

/// Every command's own failure is one `orchard: ` (or `orchard-sandbox: `) line on standard error,
/// nothing on standard output, no usage, and status 1. The commands are read from the executables
/// themselves (`--experimental-dump-help`), so a new command without a failure case here fails.
@Suite("Every command fails in one line")
struct FailureLineTests {
    /// One way to make a command fail that needs no server: a missing file, a port nothing
    /// listens on, a missing admin token. `{dir}` is a fresh temporary folder, `{port}` a free port.
    struct Case {
        var arguments: [String]
        var environment: [String: String] = [:]
    }

    /// The `--config` a command cannot read.
    static let missingConfig = ["--config", "{dir}/missing/orchard.json"]
    /// A loopback server nothing listens on (`{port}`, free when the test starts), with a token.
    static let deadServer = ["--server", "http://127.0.0.1:{port}", "--token-file", "{dir}/token"]

    /// The failure paths, by command; a command may have several.
    static let cases: [String: [Case]] = [
        "orchard serve": [Case(arguments: missingConfig)],
        "orchard migrate": [Case(arguments: missingConfig)],
        "orchard doctor": [Case(arguments: ["--domains", "--ca-file", "{dir}/missing-ca.pem"] + missingConfig)],
        "orchard token decrypt": [
            Case(arguments: ["--token", "{dir}/missing.json", "--key", "{dir}/missing.pem", "--merchant-id", "merchant.x"]),
            Case(arguments: ["--token", "{dir}/missing.json", "--key", "{dir}/missing.pem"]),
        ],
        "orchard domains register": adminCases(["--partner-id", "p1", "--name", "Shop", "--domain", "shop.example"]),
        "orchard domains unregister": adminCases(["--partner-id", "p1", "--domain", "shop.example", "--reason", "gone"]),
        "orchard domains show": adminCases([]),
        "orchard certs csr": [Case(arguments: ["--type", "identity", "--merchant-id", "merchant.x", "--out", "{dir}/token/sub"])],
        "orchard certs import": [Case(arguments: ["--cer", "{dir}/missing.cer", "--key", "{dir}/missing.key", "--out", "{dir}/x.pem"])],
        "orchard certs inspect": [Case(arguments: ["{dir}/missing.pem"])],
        "orchard certs rotate status": [Case(arguments: ["--type", "identity", "--merchant", "merchant.x"] + missingConfig)],
        "orchard certs rotate csr": [Case(arguments: ["--type", "identity", "--merchant", "merchant.x"] + missingConfig)],
        "orchard certs rotate import": [
            Case(arguments: ["--type", "identity", "--merchant", "merchant.x", "--cer", "{dir}/missing.cer"] + missingConfig)
        ],
        "orchard certs rotate prove": [Case(arguments: ["--type", "processing", "--merchant", "merchant.x"] + missingConfig)],
        "orchard certs rotate retire": [Case(arguments: ["--type", "processing", "--merchant", "merchant.x"] + missingConfig)],
        "orchard payments list": adminCases([]),
        "orchard payments settle": adminCases(["pay_1"]),
        "orchard payments cancel": adminCases(["pay_1"]),
        "orchard payments resolve": adminCases(["pay_1", "--state", "authorized"]),
        "orchard mandates list": adminCases([]),
        "orchard mandates show": adminCases(["mdt_1"]),
        "orchard mandates end": adminCases(["mdt_1"]),
        "orchard mandates rotate-usage-key": adminCases(["--merchant", "merchant.x"]),
        "orchard keys create": [Case(arguments: ["--merchant", "merchant.x"] + missingConfig)],
        "orchard keys list": [Case(arguments: missingConfig)],
        "orchard keys revoke": [Case(arguments: ["key_0000000000000000"] + missingConfig)],
        "orchard webhooks list": [Case(arguments: missingConfig)],
        "orchard webhooks replay": [Case(arguments: ["evt_1"] + missingConfig)],
        "orchard webhooks send-test": adminCases(["--merchant", "merchant.x", "--type", "payment.authorized"]),
        "orchard guard status": [Case(arguments: missingConfig)],
        "orchard-sandbox demo": [
            Case(arguments: ["--state-dir", "{dir}/demo", "--port", "0", "--webhook-rotation"]),
            Case(arguments: ["--state-dir", "{dir}/token/demo", "--port", "0"]),
        ],
        "orchard-sandbox mock-gateway": [Case(arguments: ["--state-dir", "{dir}/token/mock", "--port", "0"])],
        "orchard-sandbox token mint": [Case(arguments: ["--state-dir", "{dir}/token/pki", "--amount", "100"])],
    ]

    /// Commands with no failure of their own to drive, and why.
    static let cannotFail: [String: String] = [:]

    /// An admin command's two failures: no token at all, and a server nothing listens on.
    static func adminCases(_ arguments: [String]) -> [Case] {
        [Case(arguments: arguments + ["--server", "http://127.0.0.1:{port}"]), Case(arguments: arguments + deadServer)]
    }

    /// What is wrong with a failure's output, if anything.
    static func problems(_ typed: String, status: Int32, stdout: String, stderr: String, prefix: String) -> [String] {
        var problems: [String] = []
        if status != 1 { problems.append("\(typed): status \(status), not 1") }
        if !stdout.isEmpty { problems.append("\(typed): printed on standard output: \(stdout.prefix(200))") }
        let lines = stderr.split(separator: "\n", omittingEmptySubsequences: false)
        if !(lines.count == 2 && lines[1].isEmpty && lines[0].hasPrefix(prefix) && lines[0].count > prefix.count + 3) {
            problems.append("\(typed): standard error is not one \(prefix)line: \(stderr.prefix(400).debugDescription)")
        }
        if stderr.contains("USAGE:") || stderr.contains("Usage:") { problems.append("\(typed): printed the usage") }
        return problems
    }

    @Test("every command's own failure: status 1, one prefixed line on standard error, nothing else")
    func everyCommandFailsInOneLine() async throws {
        var leaves: [(URL, CommandTree.Command)] = []
        for executable in [OrchardProcess.orchard, OrchardProcess.sandbox] {
            // A group only chooses a command (alone it prints its help); `guard` runs `guard status`.
            leaves += try await CommandTree.commands(of: executable).filter { !$0.hasSubcommands }.map { (executable, $0) }
        }
        let paths = Set(leaves.map(\.1.path))
        #expect(leaves.count > 30, "the executables' commands were read (\(leaves.count))")
        for path in paths.sorted() where Self.cases[path] == nil && Self.cannotFail[path] == nil {
            Issue.record("\(path) has no failure case here and is not listed as unable to fail")
        }
        for path in Set(Self.cases.keys).union(Self.cannotFail.keys).sorted() where !paths.contains(path) {
            Issue.record("\(path) is listed here but is no command")
        }

        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        // A file where the cases want a folder (`{dir}/token/sub`), holding a token for the dead-server cases.
        try Data("an-admin-token-of-some-length-0123456789\n".utf8).write(to: directory.url.appendingPathComponent("token"))
        let port = try #require(LoopbackPort.free())
        var problems: [String] = []
        for (executable, command) in leaves {
            for failure in Self.cases[command.path] ?? [] {
                let arguments =
                    Array(command.words.dropFirst())
                    + failure.arguments.map {
                        $0.replacingOccurrences(of: "{dir}", with: directory.url.path).replacingOccurrences(of: "{port}", with: "\(port)")
                    }
                var environment = ProcessInfo.processInfo.environment.filter { $0.key != "ORCHARD_ADMIN_TOKEN" }
                environment.merge(failure.environment) { $1 }
                let result = try await OrchardProcess.run(arguments, environment: environment, executable: executable)
                problems += Self.problems(
                    ([command.words[0]] + arguments).joined(separator: " "), status: result.status,
                    stdout: String(decoding: result.stdout, as: UTF8.self), stderr: result.stderr, prefix: "\(command.words[0]): ")
            }
        }
        for problem in problems { Issue.record("\(problem)") }
    }

    @Test("the check finds a usage screen, a status 64, a second line and output on standard output")
    func checkCanFail() {
        let usage = "Error: Missing expected argument\nUsage: orchard webhooks send-test\n  See 'orchard help'.\n"
        #expect(Self.problems("x", status: 64, stdout: "", stderr: usage, prefix: "orchard: ").count == 3)
        #expect(Self.problems("x", status: 1, stdout: "partial", stderr: "orchard: broke\n", prefix: "orchard: ").count == 1)
        #expect(Self.problems("x", status: 1, stdout: "", stderr: "orchard: a\norchard: b\n", prefix: "orchard: ").count == 1)
        #expect(Self.problems("x", status: 1, stdout: "", stderr: "orchard: broke\n", prefix: "orchard-sandbox: ").count == 1)
        #expect(Self.problems("x", status: 1, stdout: "", stderr: "orchard: something broke\n", prefix: "orchard: ").isEmpty)
    }
}
