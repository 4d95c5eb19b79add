import Foundation
import OrchardConfiguration
import OrchardIntegrationTesting
import OrchardServerTesting
import OrchardServices
import OrchardTesting
import Testing

extension DocumentationBlocksTests {
    /// The payment-states block against an `orchard serve` whose mock processor answered 503 (the
    /// payment is `unknown`, its first re-send an hour away), its webhooks signed with a secret of
    /// the older form: the deliveries it made, for the python blocks.
    func unknownPaymentBlocks() async throws -> (deliveries: [MockWebhookReceiver.Delivery], secret: String) {
        let older = "an-older-webhook-secret-without-the-whsec-prefix"
        let mock = try await CrashTests.mock()
        let receiver = MockWebhookReceiver(secret: older)
        _ = try await receiver.start()
        let server = try ServerProcess(processorURL: mock.baseURL, environment: ["ORCHARD_WEBHOOK_SECRET": older]) { file in
            file.merchants[0].webhook = .init(url: receiver.url, secret: "env:ORCHARD_WEBHOOK_SECRET")
            file.payments?.reconcileFirstDelaySeconds = 3600
            file.payments?.reconcileMaximumDelaySeconds = 3600
        }
        defer { Task { await mock.stop() } }
        try await server.start()
        mock.answerNext([.status(503)])
        let (order, request) = try await server.order()
        _ = try await server.pay(order, request)
        let unknown = try #require(try await server.payments(order: order).first { $0.state == "unknown" }, "the payment is unknown")
        var shell = DocumentationShell(directory: server.directory.url, server: "http://127.0.0.1:\(server.port)")
        shell.variables = ["ORCHARD_ADMIN_TOKEN": MoreMerchants.adminToken, "ID": unknown.id]
        let blocks = try Self.blocks(.unknownPayment)
        #expect(!blocks.isEmpty, "the payment-states block was found")
        for block in blocks {
            do { try await shell.run(block) } catch { Issue.record("\(error)") }
        }
        #expect(try await server.payments(order: order).first?.state == "authorized", "the block resolved the payment")
        let deliveries = try await receiver.wait { seen in Set(seen.map(\.type)).isSuperset(of: ["payment.unknown", "payment.authorized"]) }
        await server.stop()
        await receiver.stop()
        return (deliveries, older)
    }
}
