import ArgumentParser
import Foundation
import Logging
import OrchardConfiguration
import OrchardCore
import OrchardRuntime
import OrchardServer
import OrchardServices

/// `orchard keys …`: the merchants' secret API keys for the payments API (`/v1/`), kept in the
/// configured store (a running Orchard sees a new key at once).
struct Keys: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Create, list and revoke merchants' secret API keys for the payments API.",
        discussion: """
            A merchant holds at most two active keys: create the new one, deploy it, then revoke \
            the old one. The secret is printed once and stored only as its SHA-256.
            """,
        subcommands: [Create.self, List.self, Revoke.self])

    struct StoreOptions: ParsableArguments {
        @Option(help: ArgumentHelp("The configuration file (JSON).", valueName: "file"))
        var config: String = "Config/orchard.json"

        /// Runs `body` with what the configuration says of the store and merchants, and the store,
        /// which stops (a PostgreSQL store's connections close) when `body` returns or throws. Reads
        /// no certificate or key: these commands need the store only (docs/commands.md).
        func withStore<T: Sendable>(_ body: (StoreCommandConfiguration, any OrchardStore) async throws -> T) async throws -> T {
            let configuration = try StoreCommandConfiguration.load(path: config)
            var logger = Logger(label: "orchard")
            logger.logLevel = .warning
            return try await configuration.withStore(logger: logger) { try await body(configuration, $0) }
        }
    }

    struct Create: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Create a key and print its secret (once).")

        @OptionGroup var store: StoreOptions
        @Option(help: "The merchant identifier: a configured merchant's, or a registered merchant's partner ID.")
        var merchant: String

        func run() async throws {
            let (record, secret) = try await store.withStore { configuration, store in
                let registered = try await store.registeredMerchants()
                guard configuration.knowsMerchant(merchant, registered: registered) else {
                    throw CommandFailure(
                        "there is no merchant \(merchant): give a configured merchantIdentifier or a registered partner ID")
                }
                let (record, secret) = APIKeyRecord.generate(merchantIdentifier: merchant, at: Date())
                do {
                    try await store.insertAPIKey(record)
                } catch let error as CoreError {
                    throw CommandFailure(error.message)
                } catch let error as StoreError {
                    throw CommandFailure(error.message)
                }
                return (record, secret)
            }
            say("created \(record.id) for \(merchant)")
            say("secret (shown once; keep it in the shop's backend only):")
            say(secret)
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List keys (never their secrets).")

        @OptionGroup var store: StoreOptions
        @Option(help: "Only this merchant's keys.") var merchant: String?

        func run() async throws {
            let keys = try await store.withStore { _, store in try await store.apiKeys(merchantIdentifier: merchant) }
            if keys.isEmpty { say("no API keys") }
            let formatter = ISO8601DateFormatter()
            for key in keys {
                let state = key.revokedAt.map { "revoked \(formatter.string(from: $0))" } ?? "active"
                say(
                    "\(key.id)  \(TerminalText.escaped(key.merchantIdentifier))  created \(formatter.string(from: key.createdAt))  \(state)"
                )
            }
        }
    }

    struct Revoke: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Revoke a key: calls with it get 401 from now on.")

        @OptionGroup var store: StoreOptions
        @Argument(help: "The key ID (key_…), as `orchard keys list` shows it.") var key: String

        func run() async throws {
            let revoked = try await store.withStore { _, store in try await store.revokeAPIKey(id: key, at: Date()) }
            guard revoked else { throw CommandFailure("there is no active key \(key)") }
            say("revoked \(key)")
        }
    }
}
