import Foundation
import OrchardTesting
import Testing

/// `orchard keys` and `orchard webhooks` as an operator runs them, on the demo's configuration.
@Suite("orchard keys and orchard webhooks")
struct KeysCommandTests {
    struct Run {
        var status: Int32
        var stdout: String
        var stderr: String
        var lines: [String] { stdout.split(separator: "\n").map(String.init) }
    }

    /// Runs `orchard <arguments> --config <the demo's configuration>`.
    struct Setup {
        let configuration: String

        func orchard(_ arguments: [String]) async throws -> Run {
            let result = try await OrchardProcess.run(arguments + ["--config", configuration])
            return Run(status: result.status, stdout: String(decoding: result.stdout, as: UTF8.self), stderr: result.stderr)
        }
    }

    static func withSetup(_ body: (Setup) async throws -> Void) async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let environment = try DemoEnvironment.prepare(directory: directory.path("demo"))
        let configuration = try environment.writeServerConfiguration(gatewayPort: 9, serverPort: 0, publicDirectory: nil)
        try await body(Setup(configuration: configuration))
    }

    static let merchant = DemoEnvironment.merchantIdentifier

    /// `orchard keys create`: its key ID and secret.
    static func create(_ setup: Setup) async throws -> (id: String, secret: String) {
        let run = try await setup.orchard(["keys", "create", "--merchant", merchant])
        #expect(run.status == 0 && run.stderr.isEmpty, "\(run.stderr)")
        let lines = run.lines
        try #require(lines.count == 3, "\(lines)")
        let created = lines[0].split(separator: " ").map(String.init)
        try #require(created.count == 4 && created[0] == "created" && created[2] == "for" && created[3] == merchant, "\(lines[0])")
        #expect(lines[1].hasPrefix("secret (shown once"))
        let secret = lines[2]
        #expect(secret.hasPrefix("osk_key_") && secret.hasPrefix("osk_\(created[1])_") && secret.utf8.count == 68)
        return (created[1], secret)
    }

    @Test("keys: create prints the secret once, list never; a third is refused in one line; revoke frees a slot")
    func keys() async throws {
        try await Self.withSetup { setup in
            let none = try await setup.orchard(["keys", "list"])
            #expect(none.status == 0 && none.lines == ["no API keys"])
            let first = try await Self.create(setup)
            let second = try await Self.create(setup)
            #expect(first.id != second.id && first.secret != second.secret)

            let listed = try await setup.orchard(["keys", "list"])
            #expect(listed.status == 0 && listed.lines.count == 2)
            #expect(listed.lines.map { String($0.prefix(20)) } == [first.id, second.id])
            #expect(listed.lines.allSatisfy { $0.contains(Self.merchant) && $0.hasSuffix("active") })
            #expect(!listed.stdout.contains("osk_") && !listed.stdout.contains(first.secret.suffix(43)), "list never shows a secret")

            let third = try await setup.orchard(["keys", "create", "--merchant", Self.merchant])
            #expect(third.status == 1)
            #expect(third.stdout.isEmpty, "no secret for a key that was not stored")
            #expect(third.stderr == "orchard: \(Self.merchant) already has 2 active API keys: revoke one first\n")

            let revoked = try await setup.orchard(["keys", "revoke", first.id])
            #expect(revoked.status == 0 && revoked.lines == ["revoked \(first.id)"])
            let afterRevoke = try await setup.orchard(["keys", "list", "--merchant", Self.merchant])
            #expect(afterRevoke.lines.count == 2)
            #expect(afterRevoke.lines.first?.contains("revoked 20") == true && afterRevoke.lines.last?.hasSuffix("active") == true)
            let again = try await setup.orchard(["keys", "revoke", first.id])
            #expect(again.status == 1 && again.stderr == "orchard: there is no active key \(first.id)\n")
            let unknownKey = try await setup.orchard(["keys", "revoke", "key_0000000000000000"])
            #expect(unknownKey.status == 1 && unknownKey.stderr == "orchard: there is no active key key_0000000000000000\n")
            _ = try await Self.create(setup)  // the revoked key's slot

            let otherMerchant = try await setup.orchard(["keys", "list", "--merchant", "merchant.other"])
            #expect(otherMerchant.status == 0 && otherMerchant.lines == ["no API keys"])
            let unknown = try await setup.orchard(["keys", "create", "--merchant", "merchant.nobody"])
            #expect(unknown.status == 1 && unknown.stdout.isEmpty)
            #expect(unknown.stderr.hasPrefix("orchard: there is no merchant merchant.nobody: "))
            #expect(unknown.stderr.split(separator: "\n").count == 1)
        }
    }

    @Test("webhooks: an empty outbox lists as such; replaying an unknown event exits 1 naming it")
    func webhooks() async throws {
        try await Self.withSetup { setup in
            let empty = try await setup.orchard(["webhooks", "list"])
            #expect(empty.status == 0 && empty.lines == ["no webhook events"])
            let pending = try await setup.orchard(["webhooks", "list", "--state", "pending", "--limit", "5"])
            #expect(pending.status == 0 && pending.lines == ["no webhook events"])
            let badState = try await setup.orchard(["webhooks", "list", "--state", "lost"])
            #expect(badState.status != 0 && badState.stderr.contains("--state must be pending, delivered, failed or skipped"))

            let missing = try await setup.orchard(["webhooks", "replay", "evt_missing"])
            #expect(missing.status == 1 && missing.stdout.isEmpty)
            #expect(missing.stderr == "orchard: no such event: evt_missing\n")
            let two = try await setup.orchard(["webhooks", "replay", "evt_a", "evt_b"])
            #expect(two.status == 1 && two.stderr == "orchard: no such event: evt_a, evt_b\n")
            let nothing = try await setup.orchard(["webhooks", "replay"])
            #expect(nothing.status == 64 && nothing.stderr.contains("Missing expected argument '<events> ...'"), "\(nothing.stderr)")
        }
    }
}
