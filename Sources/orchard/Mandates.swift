import ArgumentParser
import Foundation

/// `orchard mandates …`: the operator's view of recurring, deferred and reload mandates,
/// through a running Orchard's admin API.
struct Mandates: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "List, show and end the mandates that recurring, deferred and reload payments set up.",
        discussion: "The admin token comes from ORCHARD_ADMIN_TOKEN or --token-file.",
        subcommands: [List.self, Show.self, End.self, RotateUsageKey.self])

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List mandates, newest first, of every merchant or one.")

        @OptionGroup var admin: AdminAPIOptions
        @Option(help: "Only this merchant's (a merchant ID, or a registered merchant's partner ID).") var merchant: String?
        @Option(help: "active or ended.") var state: String?
        @Option(help: "At most this many (1–1000).") var limit: Int = 100

        func run() async throws {
            var query = ["limit=\(limit)"]
            if let merchant { query.append("merchant=\(Domains.escape(merchant))") }
            if let state { query.append("state=\(Domains.escape(state))") }
            try await admin.call("GET", "/admin/mandates?" + query.joined(separator: "&"))
        }
    }

    struct Show: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Show one mandate and its merchant.")
        @OptionGroup var admin: AdminAPIOptions
        @Argument(help: "The mandate ID.") var mandate: String

        func run() async throws {
            try await admin.call("GET", "/admin/mandates/\(Domains.escape(mandate))")
        }
    }

    struct End: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "End a mandate: no more charges, the processor's stored credential deleted, the token unlinked at Apple.",
            discussion: "The shop gets mandate.ended with endedReason operator. Ending an ended mandate changes nothing.")
        @OptionGroup var admin: AdminAPIOptions
        @Argument(help: "The mandate ID.") var mandate: String

        func run() async throws {
            try await admin.call("POST", "/admin/mandates/\(Domains.escape(mandate))/end")
        }
    }

    struct RotateUsageKey: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "rotate-usage-key",
            abstract: "Replace a merchant's usage key (merchant token usage information); every token is announced to Apple again.",
            discussion: "The old key is retired and seals nothing more. The merchant must have merchantTokenUsage.")
        @OptionGroup var admin: AdminAPIOptions
        @Option(help: "The merchant ID.") var merchant: String

        func run() async throws {
            try await admin.call("POST", "/admin/usage-keys/\(Domains.escape(merchant))/rotate")
        }
    }
}
