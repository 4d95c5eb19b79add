import Foundation
import OrchardConfiguration
import OrchardCore
import OrchardRuntime
import OrchardTesting
import Testing

/// The commands docs/commands.md says "open the configured store directly" read the store
/// section and the merchants' IDs only: a file naming certificates and `env:` secrets this
/// machine does not have (the production example's `/etc/orchard/…`) still opens its store.
@Suite("orchard keys, webhooks and guard status read only the store section")
struct StoreCommandsTests {
    /// The demo's configuration, edited by `change` (its JSON as a dictionary), written beside it.
    static func edited(_ setup: KeysCommandTests.Setup, _ change: (inout [String: Any]) -> Void) throws -> KeysCommandTests.Setup {
        let data = try Data(contentsOf: URL(fileURLWithPath: setup.configuration))
        var json = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        change(&json)
        let path = URL(fileURLWithPath: setup.configuration).deletingLastPathComponent().appendingPathComponent("edited.json").path
        try JSONSerialization.data(withJSONObject: json, options: [.prettyPrinted, .sortedKeys]).write(to: URL(fileURLWithPath: path))
        return KeysCommandTests.Setup(configuration: path)
    }

    @Test("a configuration whose certificates and env: secrets are missing but whose store is fine: every store command works")
    func missingSecrets() async throws {
        try await KeysCommandTests.withSetup { demo in
            let setup = try Self.edited(demo) { json in
                var merchants = json["merchants"] as? [[String: Any]] ?? []
                merchants[0]["identityCertificate"] = "/etc/orchard/merchant-identity.pem"
                merchants[0]["identityKey"] = "env:ORCHARD_TEST_UNSET_IDENTITY_KEY"
                json["merchants"] = merchants
                json["admin"] = ["token": "env:ORCHARD_TEST_UNSET_ADMIN_TOKEN"]
            }
            // The whole loader (serve's) refuses it: the certificate is not there.
            #expect(throws: ConfigurationError.self) { try ServerConfiguration.load(path: setup.configuration, environment: [:]) }

            let created = try await KeysCommandTests.create(setup)
            let listed = try await setup.orchard(["keys", "list"])
            #expect(listed.status == 0 && listed.lines.count == 1 && listed.stdout.hasPrefix(created.id), "\(listed)")
            let revoked = try await setup.orchard(["keys", "revoke", created.id])
            #expect(revoked.status == 0 && revoked.lines == ["revoked \(created.id)"], "\(revoked)")
            let unknown = try await setup.orchard(["keys", "create", "--merchant", "merchant.nobody"])
            #expect(unknown.status == 1 && unknown.stderr.hasPrefix("orchard: there is no merchant merchant.nobody: "), "\(unknown)")
            let events = try await setup.orchard(["webhooks", "list"])
            #expect(events.status == 0 && events.lines == ["no webhook events"], "\(events)")
            let replay = try await setup.orchard(["webhooks", "replay", "evt_missing"])
            #expect(replay.status == 1 && replay.stderr == "orchard: no such event: evt_missing\n", "\(replay)")
            let guardStatus = try await setup.orchard(["guard", "status"])
            #expect(guardStatus.status == 0 && guardStatus.lines.count == 1, "\(guardStatus)")

            // The keys made through the edited file are the demo's: the same store.
            let demoList = try await demo.orchard(["keys", "list"])
            #expect(demoList.lines.count == 1 && demoList.stdout.contains("revoked"), "\(demoList)")
        }
    }

    @Test("what the store commands still refuse: an unreadable file, and a store section serve refuses, in one line")
    func refusals() async throws {
        try await KeysCommandTests.withSetup { demo in
            let badStore = try Self.edited(demo) { json in json["store"] = ["postgres": ["host": "127.0.0.1"]] }
            let refused = try await badStore.orchard(["keys", "list"])
            #expect(refused.status == 1 && refused.stdout.isEmpty, "\(refused)")
            #expect(
                refused.stderr.hasPrefix("orchard: ") && refused.stderr.contains("store.postgres")
                    && refused.stderr.split(separator: "\n").count == 1, "\(refused)")
            let typo = try Self.edited(demo) { json in json["stor"] = [:] }
            let unknownKey = try await typo.orchard(["webhooks", "list"])
            #expect(unknownKey.status == 1 && unknownKey.stderr.contains("stor: not a setting"), "\(unknownKey)")
        }
    }

    @Test("guard status with nothing checked says why: the guard is disabled, or serve has not run it yet")
    func guardNothingChecked() async throws {
        try await KeysCommandTests.withSetup { demo in
            // The demo's configuration disables the guard (its domains are this machine's names).
            let disabled = try await demo.orchard(["guard", "status"])
            #expect(disabled.status == 0, "\(disabled)")
            #expect(disabled.lines == ["the guard is disabled (guard.enabled is false in the configuration), so it has checked nothing"])
            let enabled = try Self.edited(demo) { json in json["guard"] = ["enabled": true] }
            let notYet = try await enabled.orchard(["guard", "status"])
            #expect(notYet.status == 0 && notYet.lines == ["the guard has checked nothing yet (is orchard serve running?)"], "\(notYet)")
        }
    }
}
