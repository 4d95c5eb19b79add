import ArgumentParser
import Foundation

/// `orchard payments …`: the back office, through a running Orchard's admin API.
struct Payments: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "List payments, and settle or cancel authorized ones through their processor.",
        discussion: "The admin token comes from ORCHARD_ADMIN_TOKEN or --token-file.",
        subcommands: [List.self, Settle.self, Cancel.self, Resolve.self])

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "List payments, newest first (unknown ones need reconciling with the processor).")

        @OptionGroup var admin: AdminAPIOptions
        @Option(help: "pending, authorized, refused, failed, unknown, settled or cancelled (superseded: older databases).")
        var state: String?
        @Option(help: "Only this order's payments.") var order: String?
        @Option(help: "At most this many (1–1000).") var limit: Int = 100

        func run() async throws {
            var query = ["limit=\(limit)"]
            if let state { query.append("state=\(Domains.escape(state))") }
            if let order { query.append("order=\(Domains.escape(order))") }
            try await admin.call("GET", "/admin/payments?" + query.joined(separator: "&"))
        }
    }

    /// Settle and cancel differ only in the action they name.
    protocol PaymentAction: AsyncParsableCommand {
        static var action: String { get }
        var admin: AdminAPIOptions { get }
        var payment: String { get }
    }

    struct Settle: PaymentAction {
        static let configuration = CommandConfiguration(abstract: "Settle (capture) an authorized payment.")
        static let action = "settle"
        @OptionGroup var admin: AdminAPIOptions
        @Argument(help: "The payment ID.") var payment: String
    }

    struct Cancel: PaymentAction {
        static let configuration = CommandConfiguration(abstract: "Cancel (void) an authorized payment.")
        static let action = "cancel"
        @OptionGroup var admin: AdminAPIOptions
        @Argument(help: "The payment ID.") var payment: String
    }

    struct Resolve: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Record what the processor says about an unknown payment: authorized (order paid) or refused (order reopened).")
        @OptionGroup var admin: AdminAPIOptions
        @Argument(help: "The payment ID.") var payment: String
        @Option(help: "authorized or refused.") var state: String

        func run() async throws {
            try await admin.call("POST", "/admin/payments/\(Domains.escape(payment))/resolve", body: ["state": state])
        }
    }
}

extension Payments.PaymentAction {
    func run() async throws {
        try await admin.call("POST", "/admin/payments/\(Domains.escape(payment))/\(Self.action)")
    }
}
