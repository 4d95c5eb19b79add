import CurlClient
import Foundation
import OrchardConfiguration
import OrchardCore
import OrchardIntegrationTesting
import OrchardRuntime
import OrchardSQLite
import OrchardServer
import OrchardServerTesting
import OrchardServices
import OrchardTesting
import ProcessorClients
import Testing

/// One hostile tenant — thousands of undelivered events and an endpoint that accepts and never
/// answers — does not hold back another tenant's webhooks: each endpoint has a worker of its own.
@Suite("Webhook fairness: one merchant's backlog and hanging endpoint delay only its own events")
struct WebhookFairnessTests {
    static let backlog = 2000
    static let secret = String(repeating: "f", count: 40)

    @Test("with 2000 events due for a hanging endpoint, another merchant's webhook still arrives within a poll or two")
    func hostileTenant() async throws {
        let hanging = MockWebhookReceiver(secret: Self.secret)
        hanging.answer(200, delay: .seconds(3600))
        let healthy = MockWebhookReceiver(secret: Self.secret)
        try await hanging.start()
        try await healthy.start()
        defer {
            Task {
                await hanging.stop()
                await healthy.stop()
            }
        }
        try await ServerHarness.with(
            environment: ["HOOK_SECRET": Self.secret], callsShops: true,
            configure: { file, directory in
                try MoreMerchants.addSecondMerchant(&file, directory)
                file.merchants[0].webhook = .init(url: hanging.url, secret: "env:HOOK_SECRET")
                file.merchants[1].webhook = .init(url: healthy.url, secret: "env:HOOK_SECRET")
                file.webhooks = .init(firstRetrySeconds: 600, timeoutMilliseconds: 1000, pollIntervalMilliseconds: 100)
            }
        ) { server in
            // The backlog, written straight to the store: due now, oldest first, all the first merchant's.
            let now = Date()
            for index in 0..<Self.backlog {
                try await TestRecords.authorizedPayment(
                    in: server.store, order: "hostile-\(index)", merchant: TestMaterial.merchantIdentifier, at: now)
            }
            // The hanging endpoint is being called: its worker is stuck on its first batch.
            _ = try await hanging.wait { !$0.isEmpty }

            let written = ContinuousClock.now
            try await TestRecords.authorizedPayment(
                in: server.store, order: "polite-1", merchant: TestMaterial.secondMerchantIdentifier, at: Date())
            let seen = try await healthy.wait { $0.contains { $0.type == "payment.authorized" } }
            let waited = ContinuousClock.now - written
            #expect(seen.contains { $0.type == "payment.authorized" && $0.verified }, "delivered, signed, after \(waited)")
            // Before: a pass took the 100 oldest due events (all the hostile merchant's) and waited
            // for each to time out; the other merchant's event waited for the whole backlog.
            #expect(hanging.deliveries.count < 100, "the hanging endpoint is called one at a time, within its batch")
            let pending = try await server.store.webhookEvents(
                merchantIdentifier: TestMaterial.merchantIdentifier, state: .pending, limit: 3000)
            #expect(pending.count > Self.backlog - 100, "the backlog stays the hostile merchant's own")
        }
    }

    @Test("a merchant's backlog is sent batch after batch, not one batch a poll")
    func backlogDrains() async throws {
        let receiver = MockWebhookReceiver(secret: Self.secret)
        try await receiver.start()
        defer { Task { await receiver.stop() } }
        let environment = ["HOOK_SECRET": Self.secret]
        try await ServerHarness.with(
            environment: environment, callsShops: true,
            configure: { file, directory in
                file.merchants[0].webhook = .init(url: receiver.url, secret: "env:HOOK_SECRET")
                // One pass at start, then none for a minute: only a pass that follows a full batch
                // can send the rest in time.
                file.webhooks = .init(firstRetrySeconds: 600, pollIntervalMilliseconds: 60_000)
                // Written before the server starts, so its first pass finds them all due.
                let store = try ServerConfiguration.resolve(
                    file, relativeTo: directory.url.path, environment: environment, processors: ProcessorFactory.drivers
                ).openSQLiteStore()
                for index in 0..<35 {
                    try await TestRecords.authorizedPayment(
                        in: store, order: "busy-\(index)", merchant: TestMaterial.merchantIdentifier, at: Date())
                }
            }
        ) { server in
            let seen = try await receiver.wait { $0.count >= 35 }
            #expect(seen.count == 35, "\(seen.count) of 35 sent before the next poll, a minute away")
        }
    }

}
