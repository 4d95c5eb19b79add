import CurlClient
import Foundation
import OrchardConfiguration
import OrchardCore
import OrchardIntegrationTesting
import OrchardServerTesting
import OrchardTesting
import Testing

/// `orchard payments`, a process against a live server that charged through mock Worldpay.
@Suite("orchard payments: the back office from the command line")
struct PaymentsCommandTests {
    @Test("orchard payments list|settle|cancel drive the back office as a process")
    func cli() async throws {
        try await ProcessorFixture.with(.worldpay, admin: true, transport: .live) { fixture in
            let (id, request) = try await fixture.order()
            let (response, _) = try await fixture.pay(id, request)
            let paymentId = try #require(response.json?["paymentId"] as? String)
            var environment = ProcessInfo.processInfo.environment
            environment["ORCHARD_ADMIN_TOKEN"] = MoreMerchants.adminToken
            let server = ["--server", "http://127.0.0.1:\(fixture.server.port)"]
            let listed = try await OrchardProcess.run(
                ["payments", "list", "--state", "authorized"] + server, environment: environment)
            #expect(listed.status == 0, "\(listed.stderr)")
            let payments = (try JSONSerialization.jsonObject(with: Data(listed.stdout)) as? [String: Any])?["payments"] as? [[String: Any]]
            #expect(payments?.first?["id"] as? String == paymentId)
            #expect(payments?.first?["createdAt"] as? String != nil, "dates are ISO 8601")
            let cancelled = try await OrchardProcess.run(["payments", "cancel", paymentId] + server, environment: environment)
            #expect(cancelled.status == 0, "\(cancelled.stderr)")
            #expect(fixture.mock.charges.first?.state == .cancelled)
            let again = try await OrchardProcess.run(["payments", "settle", paymentId] + server, environment: environment)
            #expect(again.status == 1)
            #expect(again.stderr.contains("HTTP 409"))
        }
    }
}
