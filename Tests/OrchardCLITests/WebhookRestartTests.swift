import CurlClient
import Foundation
import OrchardConfiguration
import OrchardCore
import OrchardIntegrationTesting
import OrchardSQLite
import OrchardServer
import OrchardServerTesting
import OrchardServices
import OrchardTesting
import Testing

/// The outbox across a restart: a real `orchard serve` process writes an event its receiver
/// cannot take, goes down (SIGTERM or SIGKILL) and, started again on the same state folder,
/// delivers it once the receiver is back.
@Suite("Webhooks across a restart: a real server process, a receiver that comes back")
struct WebhookRestartTests {
    static let secret = "whsec-" + String(repeating: "0123456789abcdef", count: 3)

    enum Stop: String, CaseIterable, Sendable { case terminate, kill }

    /// A server whose merchant's webhook goes to `receiver`, retried after 1 s, then at most every 2 s.
    static func server(receiver: MockWebhookReceiver) throws -> ServerProcess {
        try ServerProcess(processorURL: nil, environment: ["SHOP_WEBHOOK_SECRET": secret]) { file in
            file.merchants[0].webhook = .init(url: receiver.url, secret: "env:SHOP_WEBHOOK_SECRET")
            file.webhooks = .init(firstRetrySeconds: 1, maximumRetrySeconds: 2, pollIntervalMilliseconds: 100)
        }
    }

    /// `orchard webhooks list` lines (one per event) once `condition` holds on them, or at the deadline.
    static func listed(
        _ server: ServerProcess, within timeout: Duration = Eventually.patience, until condition: ([String]) -> Bool
    ) async throws -> [String] {
        var lines: [String] = []
        _ = try await Eventually.until(timeout: timeout, every: .milliseconds(100)) {
            let result = try await server.command(["webhooks", "list"])
            #expect(result.status == 0, "\(result.stderr)")
            lines = String(decoding: result.stdout, as: UTF8.self).split(separator: "\n").map(String.init)
            return condition(lines)
        }
        return lines
    }

    @Test(
        "an event the receiver missed is delivered once, signed, by the restarted server; `orchard webhooks replay` sends it again",
        arguments: Stop.allCases)
    func deliveredAfterRestart(stop: Stop) async throws {
        let receiver = MockWebhookReceiver(secret: Self.secret)
        try await receiver.start()
        await receiver.goDown()  // connections closed unanswered, on the port the configuration names
        let server = try Self.server(receiver: receiver)
        try await server.start()
        let (orderId, request) = try await server.order()
        let paid = try await server.pay(orderId, request)
        #expect(paid.status == 200)
        let paymentId = try #require(paid.json?["paymentId"] as? String)

        let failing = try await Self.listed(server) { $0.contains { $0.contains("pending after") && !$0.contains("after 0 attempt") } }
        #expect(failing.count == 1 && failing[0].contains("payment.authorized") && failing[0].contains("pending after"), "\(failing)")
        #expect(!failing.contains { $0.contains("after 0 attempt") }, "the dispatcher tried while the receiver was down: \(failing)")
        switch stop {
        case .terminate: await server.stop()
        case .kill: await server.kill()
        }
        let missed = try await Self.events(server)
        #expect(missed.count == 1)
        let event = try #require(missed.first)
        #expect(event.type == .paymentAuthorized && event.state == .pending && event.attempts >= 1 && event.lastError != nil)
        #expect(receiver.deliveries.isEmpty)

        receiver.comeBack()
        try await server.start()
        let once = "delivered after \(event.attempts + 1) attempt(s), last HTTP 200"
        // A server killed between claiming the event and recording its attempt leaves the claim
        // held until its lease ends (the batch lease, 110 s here): no instance may send it before,
        // as another one could still be sending. CI met it; wait for the lease, then as usual.
        let leased = max(0, (event.nextAttemptAt ?? Date()).timeIntervalSinceNow)
        let delivered = try await Self.listed(server, within: .seconds(leased) + Eventually.patience) {
            $0.contains { $0.hasPrefix(event.id) && $0.contains("delivered") }
        }
        #expect(delivered.count == 1 && delivered[0].hasPrefix(event.id) && delivered[0].hasSuffix(once), "\(delivered)")
        // Marked delivered after the 2xx, by the only dispatcher: nothing more is in flight.
        #expect(receiver.deliveries.count == 1, "exactly once: \(receiver.deliveries.map(\.eventId))")
        let delivery = try #require(receiver.deliveries.first)
        #expect(delivery.eventId == event.id && delivery.type == "payment.authorized" && delivery.status == 200)
        #expect(delivery.verified, "signed with the merchant's secret")
        #expect(delivery.body == event.payload, "the body written with the payment, byte for byte")
        let data = try #require(delivery.json?["data"] as? [String: Any])
        #expect((data["payment"] as? [String: Any])?["id"] as? String == paymentId)

        // `orchard webhooks replay` against the running server: the same event, sent once more.
        let replay = try await server.command(["webhooks", "replay", event.id])
        #expect(replay.status == 0 && String(decoding: replay.stdout, as: UTF8.self) == "\(event.id): queued\n")
        let twice = "delivered after \(event.attempts + 2) attempt(s)"
        let replayed = try await Self.listed(server) { $0.contains { $0.hasPrefix(event.id) && $0.contains(twice) } }
        #expect(replayed.contains { $0.contains(twice) }, "\(replayed)")
        await server.stop()
        await receiver.stop()

        #expect(receiver.deliveries.map(\.eventId) == [event.id, event.id])
        #expect(receiver.deliveries.allSatisfy { $0.verified && $0.body == event.payload })
        let stored = try await Self.events(server)
        #expect(stored.count == 1)
        #expect(stored.first?.id == event.id && stored.first?.state == .delivered && stored.first?.lastStatus == 200)
        #expect(stored.first?.attempts == event.attempts + 2 && stored.first?.deliveredAt != nil)
    }

    /// The events in the stopped server's store, newest first.
    static func events(_ server: ServerProcess) async throws -> [WebhookEvent] {
        let store = try SQLiteStore(path: server.databasePath)
        return try await store.webhookEvents(merchantIdentifier: nil, state: nil, limit: 100)
    }
}
