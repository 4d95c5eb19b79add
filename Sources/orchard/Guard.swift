import ArgumentParser
import Foundation
import OrchardCore
import OrchardRuntime

/// `orchard guard status`: what the guard found, read from the configured store (what a
/// running Orchard's guard wrote).
struct GuardCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "guard", abstract: "Show what the guard found: domains, certificates and registrations.",
        subcommands: [Status.self], defaultSubcommand: Status.self)

    struct Status: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Each merchant's domains, certificates and registration, with state, last check, first failure and advice.")

        @OptionGroup var store: Keys.StoreOptions
        @Option(help: "Only this merchant's.") var merchant: String?
        @Flag(help: "Only what is not ok (failing, expiring, not checked yet).") var problems = false

        func run() async throws {
            let (records, enabled) = try await store.withStore { configuration, store in
                (try await store.guardRecords(merchantIdentifier: merchant), configuration.guardEnabled)
            }
            let now = Date()
            let shown = records.filter { !problems || $0.state != .ok }
            if shown.isEmpty { say(records.isEmpty ? Self.nothingChecked(guardEnabled: enabled) : "all ok") }
            for line in shown.map({ Self.line(GuardView($0, at: now)) }) { say(line) }
            let failing = records.count { $0.state == .failing }
            if failing > 0 { throw CommandFailure("\(failing) failing") }
        }

        /// Why there is nothing to show: the guard is off in this configuration, or has not run yet.
        static func nothingChecked(guardEnabled: Bool) -> String {
            guardEnabled
                ? "the guard has checked nothing yet (is orchard serve running?)"
                : "the guard is disabled (guard.enabled is false in the configuration), so it has checked nothing"
        }

        /// The record's lines; its merchant, target and detail are outside text (a tenant's
        /// identifier and domain, a domain's headers, Apple's words): shown escaped, never run.
        static func line(_ view: GuardView) -> String {
            let formatter = ISO8601DateFormatter()
            let (merchant, target) = (TerminalText.escaped(view.merchantIdentifier), TerminalText.escaped(view.target))
            var line = "\(view.state.rawValue.uppercased())  \(merchant)  \(view.check.rawValue)  \(target)"
            if let days = view.warningDays { line += "  (\(days)-day warning)" }
            line += "\n    \(TerminalText.escaped(view.detail))"
            line += "\n    last check " + (view.checkedAt.map(formatter.string(from:)) ?? "never")
            if let first = view.firstFailureAt { line += ", failing since \(formatter.string(from: first))" }
            return line
        }
    }
}
