import ArgumentParser
import Foundation
import OrchardCore
import OrchardRuntime

extension Webhooks {
    /// `orchard webhooks send-test`: through the running server's admin API, which holds every
    /// merchant's endpoint and secrets (a registered merchant's are sealed in the store) and
    /// sends the sample exactly as it sends real events, from the same host and with the same
    /// destination checks.
    struct SendTest: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "send-test",
            abstract: "Send a signed sample event to a merchant's webhook endpoint and print its answer.",
            discussion: """
                The sample has "test": true and made-up IDs, and is not kept in the outbox. The admin token \
                comes from ORCHARD_ADMIN_TOKEN or --token-file. Exits 1 unless the endpoint answers 2xx.
                """)

        @OptionGroup var admin: AdminAPIOptions
        @Option(help: "The merchant whose endpoint gets it (a configured merchant, a registered one's partner ID, or the platform).")
        var merchant: String
        @Option(help: "The event type, e.g. payment.authorized.") var type: String

        /// How much of the endpoint's answer is printed (the server returns at most 2048 bytes).
        static let shownBody = 1024

        func validate() throws {
            guard WebhookEventType(rawValue: type) != nil else {
                throw ValidationError(
                    "--type \(TerminalText.escaped(type)) is not an event type; one of: \(WebhookEventType.allCases.map(\.rawValue).joined(separator: ", "))"
                )
            }
        }

        func run() async throws {
            let json = try await admin.answer("POST", "/admin/webhooks/test", body: ["merchantIdentifier": merchant, "type": type])
            guard let answer = json as? [String: Any], let id = answer["eventId"] as? String else {
                throw CommandFailure("the server's answer is not a test delivery")
            }
            // The URL, the shop's answer and the error are outside text: shown escaped.
            say("sent \(type) \(TerminalText.escaped(id)) to \(TerminalText.escaped(answer["url"] as? String ?? ""))")
            guard let status = answer["status"] as? Int else {
                throw CommandFailure("no answer: \(TerminalText.escaped(answer["error"] as? String ?? "unknown error"))")
            }
            say("HTTP \(status)")
            let body = answer["body"] as? String ?? ""
            if !body.isEmpty {
                let shown = String(body.prefix(Self.shownBody))
                say(TerminalText.escaped(shown) + (shown.count < body.count ? " … (\(body.count - shown.count) more characters)" : ""))
            }
            if answer["delivered"] as? Bool != true { throw CommandFailure("the endpoint answered HTTP \(status), not 2xx") }
        }
    }
}
