import Crypto
import Foundation
import OrchardCore
import OrchardTesting
import Testing

/// What a newcomer does with the sandbox, against a real `orchard-sandbox demo` process: the
/// docs' own shell blocks run as written (the demo's port put in for 8080), and the demo's
/// webhook secret checked as the docs tell a shop to check it.
@Suite("The sandbox flows the docs describe, against a running demo")
struct SandboxFlowsTests {
    /// The first ```sh block after `heading` in the doc at `path` (relative to the repository).
    static func block(in path: String, after heading: String) throws -> String {
        let text = try String(contentsOf: OrchardProcess.repositoryRoot.appendingPathComponent(path), encoding: .utf8)
        let section = try #require(text.range(of: heading), "\(path) has no \(heading)")
        let start = try #require(text.range(of: "```sh\n", range: section.upperBound..<text.endIndex))
        let end = try #require(text.range(of: "\n```", range: start.upperBound..<text.endIndex))
        return String(text[start.upperBound..<end.lowerBound])
    }

    /// Runs `script` with `sh -e` in `folder`, the built `orchard` and `orchard-sandbox` first on
    /// the PATH and the demo's port in place of 8080.
    static func run(_ script: String, in folder: URL, port: Int) async throws -> OrchardProcess.Result {
        let binaries = OrchardProcess.orchard.deletingLastPathComponent().path
        var environment = ProcessInfo.processInfo.environment
        environment["PATH"] = binaries + ":" + (environment["PATH"] ?? "/usr/bin:/bin")
        let typed = script.replacingOccurrences(of: "127.0.0.1:8080", with: "127.0.0.1:\(port)")
        return try await OrchardProcess.run(
            ["-e", "-c", typed], environment: environment, executable: URL(fileURLWithPath: "/bin/sh"), currentDirectory: folder)
    }

    /// Starts the demo with `arguments` in `folder` (state in `.orchard/demo`), runs `body`, stops it.
    static func withDemo(_ arguments: [String], in folder: URL, _ body: (Int) async throws -> Void) async throws {
        let (process, port) = try await DemoCommandTests().startDemo(in: folder, arguments)
        defer {
            process.send(SIGTERM)
            process.wait()
        }
        try await body(port)
    }

    @Test("the demo's webhook secret is whsec_: the Standard Webhooks check keyed with its decoded bytes holds")
    func webhookSecret() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let receiver = MockWebhookReceiver(secret: "not-the-demo-secret-but-long-enough-anyway")
        _ = try await receiver.start()
        try await Self.withDemo(["--webhook-url", receiver.url], in: directory.url) { port in
            let secret = try String(contentsOfFile: directory.path(".orchard/demo/webhook-secret"), encoding: .utf8)
            #expect(secret.hasPrefix("whsec_"), "\(secret)")
            let key = try #require(Data(base64Encoded: String(secret.dropFirst("whsec_".count))), "\(secret)")
            #expect(key.count == 32)
            let sent = try await OrchardProcess.run([
                "webhooks", "send-test", "--server", "http://127.0.0.1:\(port)", "--token-file",
                directory.path(".orchard/demo/admin-token"),
                "--merchant", DemoEnvironment.merchantIdentifier, "--type", "payment.authorized",
            ])
            #expect(sent.status == 0, "\(sent.stderr)")
            let delivery = try #require(receiver.deliveries.last)
            // What the standardwebhooks library's Webhook(secret) computes: HMAC-SHA256 keyed with the
            // bytes after whsec_, over "<id>.<timestamp>.<body>", base64, after "v1,".
            let id = delivery.standard[StandardWebhookSignature.idHeader] ?? ""
            let timestamp = delivery.standard[StandardWebhookSignature.timestampHeader] ?? ""
            let mac = HMAC<SHA256>.authenticationCode(
                for: Data("\(id).\(timestamp).".utf8) + Data(delivery.body), using: SymmetricKey(data: key))
            let signatures = (delivery.standard[StandardWebhookSignature.signatureHeader] ?? "").split(separator: " ").map(String.init)
            #expect(signatures.contains("v1," + Data(mac).base64EncodedString()), "\(signatures)")
        }
        await receiver.stop()
    }

    @Test("docs/shop-integration.md's sandbox block pays a payment request in-app: the authorize call answers authorized")
    func inAppPayment() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let script = try Self.block(in: "docs/shop-integration.md", after: "### Trying it with the sandbox")
        #expect(script.contains("token mint") && script.contains("--payment-request") && script.contains("-d @token.json"))
        try await Self.withDemo([], in: directory.url) { port in
            let result = try await Self.run(script, in: directory.url, port: port)
            let output = String(decoding: result.stdout, as: UTF8.self)
            #expect(result.status == 0, "\(result.stderr) \(output)")
            let last = output.split(separator: "\n").last.map(String.init) ?? ""
            let answer = try JSONSerialization.jsonObject(with: Data(last.utf8)) as? [String: Any]
            let payment = answer?["payment"] as? [String: Any]
            #expect(payment?["state"] as? String == "authorized", "\(output)")
            // The body the mint printed is the authorize call's: {"token": …}.
            let body = try JSONSerialization.jsonObject(with: Data(contentsOf: directory.url.appendingPathComponent("token.json")))
            #expect((body as? [String: Any])?["token"] is [String: Any])
        }
    }

    @Test("docs/platform-integrators.md's local block registers a shop with the demo as platform, and the shop's domain gets a session")
    func platformLocally() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let script = try Self.block(in: "docs/platform-integrators.md", after: "### Trying it locally")
        #expect(script.contains("orchard domains register"))
        try await Self.withDemo(["--platform"], in: directory.url) { port in
            let result = try await Self.run(script, in: directory.url, port: port)
            let output = String(decoding: result.stdout, as: UTF8.self)
            #expect(result.status == 0, "\(result.stderr) \(output)")
            #expect(output.contains("shop-one.example"), "\(output)")
            // The last command: a merchant session for the registered shop's domain, from the mock
            // gateway through the platform's certificate.
            let last = output.split(separator: "\n").last.map(String.init) ?? ""
            let session = try JSONSerialization.jsonObject(with: Data(last.utf8)) as? [String: Any]
            #expect(session?["merchantSessionIdentifier"] != nil, "\(last)")
        }
    }
}
