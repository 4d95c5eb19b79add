import ArgumentParser
import Foundation
import OrchardCore
import OrchardRuntime

/// `orchard webhooks …`: the webhook outbox, read and replayed in the configured store (a
/// running Orchard sends a replayed event within its poll interval), and a sample event sent
/// through a running Orchard's admin API.
struct Webhooks: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "List webhook events and their deliveries, send events again, and send a signed sample event.",
        subcommands: [List.self, Replay.self, SendTest.self])

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List events, newest first, with their delivery state.")

        @OptionGroup var store: Keys.StoreOptions
        @Option(help: "Only this merchant's events.") var merchant: String?
        @Option(help: "pending, delivered, failed or skipped.") var state: String?
        @Option(help: "At most this many (1–1000).") var limit: Int = 50
        @Flag(help: "Print each event's body too.") var bodies = false

        func validate() throws {
            guard (1...1000).contains(limit) else { throw ValidationError("--limit must be 1–1000") }
            if let state, WebhookEvent.DeliveryState(rawValue: state) == nil {
                throw ValidationError("--state must be pending, delivered, failed or skipped")
            }
        }

        func run() async throws {
            let events = try await store.withStore { _, store in
                try await store.webhookEvents(
                    merchantIdentifier: merchant, state: state.flatMap(WebhookEvent.DeliveryState.init(rawValue:)), limit: limit)
            }
            if events.isEmpty { say("no webhook events") }
            let formatter = ISO8601DateFormatter()
            for event in events {
                // The merchant (a tenant's identifier), the receiver's error and the body are outside text.
                var line = "\(event.id)  \(formatter.string(from: event.createdAt))  \(event.type.rawValue)"
                line += "  \(TerminalText.escaped(event.merchantIdentifier))  \(event.state.rawValue) after \(event.attempts) attempt(s)"
                if let status = event.lastStatus { line += ", last HTTP \(status)" }
                if event.state != .delivered, let error = event.lastError { line += ": \(TerminalText.escaped(error))" }
                if event.state == .pending, let next = event.nextAttemptAt { line += ", next \(formatter.string(from: next))" }
                say(line)
                if bodies { say("  " + TerminalText.escaped(String(decoding: event.payload, as: UTF8.self))) }
            }
        }
    }

    struct Replay: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Send events again (same event ID, so receivers can drop duplicates), whatever became of them.")

        @OptionGroup var store: Keys.StoreOptions
        @Argument(help: "Event IDs (evt_…).") var events: [String]

        func run() async throws {
            let missing = try await store.withStore { _, store in
                var missing: [String] = []
                for id in events {
                    if try await store.replayWebhookEvent(id: id, at: Date()) { say("\(id): queued") } else { missing.append(id) }
                }
                return missing
            }
            if !missing.isEmpty { throw CommandFailure("no such event: \(missing.joined(separator: ", "))") }
        }
    }
}
