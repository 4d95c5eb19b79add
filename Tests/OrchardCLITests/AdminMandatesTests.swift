import CurlClient
import Foundation
import OrchardConfiguration
import OrchardCore
import OrchardIntegrationTesting
import OrchardServer
import OrchardServerTesting
import OrchardServices
import OrchardTesting
import Testing

/// The operator's view of mandates: `/admin/mandates` and `orchard mandates`, over real HTTP
/// and as a process.
@Suite("Admin mandates: every merchant's mandates listed, shown and ended by an operator")
struct AdminMandatesTests {
    static func with(
        receiver: MockWebhookReceiver, transport: HarnessTransport = .router, _ body: (ServerHarness) async throws -> Void
    ) async throws {
        try await ServerHarness.with(
            otherMockMerchants: MoreMerchants.mockMerchants,
            environment: MoreMerchants.environment.merging(["SHOP_WEBHOOK_SECRET": MoreMerchants.webhookSecret]) { $1 },
            callsShops: true, transport: transport,
            configure: { file, directory in
                try MoreMerchants.addSecondMerchant(&file, directory)
                MoreMerchants.addAdmin(&file)
                file.webhooks = .init(firstRetrySeconds: 1, maximumRetrySeconds: 2, pollIntervalMilliseconds: 100)
                file.merchants[0].webhook = .init(url: receiver.url, secret: "env:SHOP_WEBHOOK_SECRET")
            }, body)
    }

    @Test("an operator lists, shows and ends a mandate; the shop hears mandate.ended (operator) and Apple unlinks the token")
    func operatorEnds() async throws {
        let receiver = MockWebhookReceiver(secret: MoreMerchants.webhookSecret)
        try await receiver.start()
        defer { Task { await receiver.stop() } }
        // Live: the operator's commands run as processes against the server's port.
        try await Self.with(receiver: receiver, transport: .live) { server in
            let key = try await server.apiKey()
            let token = "DNITHE000000000000000042"
            _ = server.gateway.addTokenEvent(eventType: "UPDATED_METADATA", merchantTokenIdentifier: token)
            let (_, payment) = try await RecurringPayment.pay(server, key: key, token: token)
            let mandateId = try #require(payment["mandateId"] as? String)

            func admin(_ method: String, _ path: String) async throws -> (status: Int, json: [String: Any]?) {
                let response = try await server.send(method, path, extraHeaders: MoreMerchants.authorization)
                return (response.status, response.json)
            }
            #expect(try await server.send("GET", "/admin/mandates").status == 401)
            let all = try await admin("GET", "/admin/mandates")
            #expect(all.status == 200)
            let first = try #require((all.json?["mandates"] as? [[String: Any]])?.first)
            #expect(first["merchantIdentifier"] as? String == TestMaterial.merchantIdentifier)
            #expect((first["mandate"] as? [String: Any])?["id"] as? String == mandateId)
            #expect((first["mandate"] as? [String: Any])?["credential"] == nil, "never the processor's reference")
            let other = try await admin("GET", "/admin/mandates?merchant=\(TestMaterial.secondMerchantIdentifier)")
            #expect((other.json?["mandates"] as? [Any])?.isEmpty == true)
            #expect((try await admin("GET", "/admin/mandates?state=ended").json?["mandates"] as? [Any])?.isEmpty == true)
            for bad in ["state=gone", "limit=0", "limit=1001", "limit=ten"] {
                let refused = try await server.send("GET", "/admin/mandates?\(bad)", extraHeaders: MoreMerchants.authorization)
                #expect(refused.status == 400 && refused.errorCode == "invalid_request", "\(bad)")
            }
            // The other admin lists read `limit` the same way (a word was once taken as the default).
            for list in ["/admin/payments", "/admin/webhooks"] {
                #expect(try await admin("GET", "\(list)?limit=2").status == 200, "\(list)")
                for bad in ["limit=0", "limit=1001", "limit=ten"] {
                    #expect(try await admin("GET", "\(list)?\(bad)").status == 400, "\(list)?\(bad)")
                }
            }
            #expect(try await admin("GET", "/admin/mandates/no-such-mandate").status == 404)
            #expect(try await admin("POST", "/admin/mandates/no-such-mandate/end").status == 404)

            var environment = ProcessInfo.processInfo.environment
            environment["ORCHARD_ADMIN_TOKEN"] = MoreMerchants.adminToken
            let base = ["--server", "http://127.0.0.1:\(server.port)"]
            let shown = try await OrchardProcess.run(["mandates", "show", mandateId] + base, environment: environment)
            #expect(shown.status == 0, "\(shown.stderr)")
            let view = try JSONSerialization.jsonObject(with: Data(shown.stdout)) as? [String: Any]
            #expect((view?["mandate"] as? [String: Any])?["state"] as? String == "active")

            let ended = try await OrchardProcess.run(["mandates", "end", mandateId] + base, environment: environment)
            #expect(ended.status == 0, "\(ended.stderr)")
            let after = (try JSONSerialization.jsonObject(with: Data(ended.stdout)) as? [String: Any])?["mandate"] as? [String: Any]
            #expect(after?["state"] as? String == "ended" && after?["endedReason"] as? String == "operator")
            #expect(server.gateway.unlinkedTokens == [token])
            let charge = try await server.api(
                "POST", "/v1/mandates/\(mandateId)/charges", key: key, json: #"{"amount": 990, "reference": "inv-9"}"#,
                idempotencyKey: "after-end")
            #expect(charge.status == 409, "an ended mandate is not charged")

            let again = try await OrchardProcess.run(["mandates", "end", mandateId] + base, environment: environment)
            #expect(again.status == 0)
            #expect(server.gateway.unlinkedTokens == [token], "ending twice unlinks once")
            let listed = try await OrchardProcess.run(
                ["mandates", "list", "--state", "ended", "--merchant", TestMaterial.merchantIdentifier] + base, environment: environment)
            #expect(listed.status == 0, "\(listed.stderr)")
            let mandates = (try JSONSerialization.jsonObject(with: Data(listed.stdout)) as? [String: Any])?["mandates"] as? [[String: Any]]
            #expect(mandates?.count == 1)

            let expected = ["payment.authorized", "mandate.created", "mandate.ended"]
            let seen = try await receiver.wait { $0.count >= expected.count }
            #expect(seen.map(\.type) == expected)
            let data = seen.last?.json?["data"] as? [String: Any]
            #expect((data?["mandate"] as? [String: Any])?["endedReason"] as? String == "operator")
            #expect(seen.allSatisfy { $0.verified })
        }
    }
}
