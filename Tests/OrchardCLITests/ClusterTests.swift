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

/// Two real `orchard serve` processes on one PostgreSQL database, behind real nginx running the
/// shipped cluster configuration (TLS, HTTP/2, round robin): a token sent 50 times at once is
/// charged once, the webhook and the re-send of an unknown payment happen once, and a domain
/// registered through one instance is served by the other.
@Suite("Two instances behind nginx on one PostgreSQL", .serialized, .enabled(if: PostgresServer.enabled))
struct ClusterTests {
    static let secret = String(repeating: "c", count: 40)
    static let newDomain = "cluster-shop.example"

    /// A running pair, nginx in front, and what they talk to.
    struct Cluster {
        let a: ServerProcess
        let b: ServerProcess
        let nginx: NginxProcess
        let mock: MockProcessors
        let receiver: MockWebhookReceiver
        let client: CurlHTTPClient
        let gateway: MockAppleGateway

        /// One call through nginx's public HTTPS listener.
        func shopper(_ method: String, _ path: String, body: [UInt8]? = nil) async throws -> CurlResponse {
            var headers: [(name: String, value: String)] = [(name: "Host", value: ServerHarness.domain)]
            if body != nil { headers.append((name: "Content-Type", value: "application/json")) }
            return try await client.execute(
                CurlRequest(
                    method: method, url: "https://127.0.0.1:\(nginx.httpsPort)\(path)", headers: headers, body: body,
                    trust: .caPEM(TestMaterial.shared.caPEM)))
        }
    }

    static func withCluster(_ body: (Cluster) async throws -> Void) async throws {
        let postgres = try await PostgresServer.shared()
        let database = try await postgres.createDatabase()
        let gateway = try await GatewayFixture.start(domains: [ServerHarness.domain], otherMerchants: MoreMerchants.mockMerchants)
        let mock = try await CrashTests.mock()
        let receiver = MockWebhookReceiver(secret: secret)
        _ = try await receiver.start()
        let environment = [
            "PGPASS": postgres.password, "VAULT_KEY": String(repeating: "7e", count: 32), "SHOP_WEBHOOK_SECRET": secret,
        ]
        func instance() throws -> ServerProcess {
            try ServerProcess(
                processorURL: mock.baseURL, environment: environment, gatewayPort: gateway.port,
                configure: { file in
                    file.store = .init(
                        postgres: .init(
                            host: "127.0.0.1", port: postgres.port, database: database.database, user: PostgresServer.user,
                            password: "env:PGPASS"))
                    file.payments?.vaultKey = "env:VAULT_KEY"
                    file.merchants[0].webhook = .init(url: receiver.url, secret: "env:SHOP_WEBHOOK_SECRET")
                    file.webhooks = .init(firstRetrySeconds: 1, pollIntervalMilliseconds: 100)
                    // The 50 taps at once would empty the default per-address bucket (burst 10), and the
                    // shopper's next tap would wait for it to refill: rates are LimitsServerTests' to test.
                    file.limits = .init(authorizations: .init(perClientIP: .init(perMinute: 6000, burst: 200)))
                },
                prepare: { file, directory in try MoreMerchants.addPlatform(&file, directory) })
        }
        let a = try instance()
        let b = try instance()
        // Both at once: the migrations must be safe when two instances start together.
        async let startA: Void = a.start()
        async let startB: Void = b.start()
        _ = try await (startA, startB)
        let nginx = try await NginxProcess(
            upstreamPorts: [a.port, b.port], domain: ServerHarness.domain, certificate: TestMaterial.shared.server)
        let client = try CurlHTTPClient()
        do {
            try await body(Cluster(a: a, b: b, nginx: nginx, mock: mock, receiver: receiver, client: client, gateway: gateway.gateway))
        } catch {
            Issue.record("instance logs: \(a.log.suffix(1500)) \(b.log.suffix(1500))")
            throw error
        }
        await a.stop()
        await b.stop()
        client.shutdown()
        await receiver.stop()
        await mock.stop()
        await gateway.gateway.stop()
        await postgres.dropDatabase(database.database)
    }

    @Test("one token 50 times across both instances: one charge, one webhook; an unknown payment re-sent once; registrations shared")
    func cluster() async throws {
        try await Self.withCluster { cluster in
            // An order through nginx, and one token sent 50 times at once.
            let created = try await cluster.shopper(
                "POST", "/api/orders", body: Array(#"{"items": [{"productId": "apple", "quantity": 2}]}"#.utf8))
            #expect(created.status == 201)
            let orderId = try #require(created.json?["orderId"] as? String)
            let request = try #require(created.json?["paymentRequest"] as? [String: Any])
            let (body, _) = try AuthorizeBody.make(orderId, request, minter: cluster.a.minter)
            let statuses = await withTaskGroup(of: Int.self) { group in
                for _ in 0..<50 {
                    group.addTask { (try? await cluster.shopper("POST", "/api/apple-pay/authorize", body: body).status) ?? 0 }
                }
                return await group.reduce(into: []) { $0.append($1) }
            }
            #expect(statuses.filter { $0 == 200 }.count == 1, "\(statuses.sorted())")
            #expect(statuses.allSatisfy { $0 == 200 || (400..<500).contains($0) }, "\(statuses.sorted())")
            #expect(cluster.mock.charges.filter { $0.reference.hasPrefix(orderId) }.count == 1)
            let log = cluster.nginx.accessLog
            #expect(log.contains("upstream=127.0.0.1:\(cluster.a.port)") && log.contains("upstream=127.0.0.1:\(cluster.b.port)"))

            // Both instances run a webhook dispatcher; the event is delivered once (checked below, once a later
            // event has been delivered after it: a wrong second delivery would have come by then).
            let first = try #require(
                try await Eventually.value { cluster.receiver.accepted.first { $0.type == "payment.authorized" }?.eventId })

            // A charge whose answer is lost is unknown; one of the two reconcilers re-sends it, once.
            cluster.mock.behaviour = .dropAfterCharge
            let (lostId, lostRequest) = try await cluster.a.order()
            let lost = try await cluster.b.pay(lostId, lostRequest)
            #expect(lost.status == 504, "the charge's answer was lost: payment_unknown")
            cluster.mock.behaviour = .authorize
            #expect(try await Eventually.until { try await cluster.a.payments(order: lostId).first?.state == "authorized" })
            let listed = try await cluster.b.send("GET", "/admin/payments?order=\(lostId)", admin: true)
            let payment = try #require((listed.json?["payments"] as? [[String: Any]])?.first)
            #expect(payment["sends"] as? Int == 2, "the first send and one re-send: \(payment)")
            #expect(cluster.mock.charges.filter { $0.reference.hasPrefix(lostId) }.count == 1)
            let later = try #require(
                try await Eventually.value {
                    cluster.receiver.accepted.first { $0.type == "payment.authorized" && $0.eventId != first }?.eventId
                })
            for event in [first, later] {
                let deliveries = cluster.receiver.deliveries.filter { $0.eventId == event }
                #expect(deliveries.count == 1, "event \(event) delivered \(deliveries.count) times")
            }

            // A domain registered through instance A is served by instance B after its next sync pass.
            let registered = try await cluster.a.send(
                "POST", "/admin/merchants",
                body: Array(
                    #"{"partnerInternalMerchantIdentifier": "cluster-partner", "partnerMerchantName": "Cluster Shop", "domainNames": ["\#(Self.newDomain)"]}"#
                        .utf8), admin: true)
            #expect(registered.status == 201)
            let association = CurlRequest(
                url: "http://127.0.0.1:\(cluster.b.port)/.well-known/apple-developer-merchantid-domain-association",
                headers: [(name: "Host", value: Self.newDomain)])
            #expect(try await Eventually.until { try await cluster.b.client.execute(association).status == 200 })
        }
    }

    @Test("the two instances register ACME and acme at the same moment: exactly one wins, the other is told 409 and undone at Apple")
    func caseVariantsAtOnce() async throws {
        try await Self.withCluster { cluster in
            // Apple holds both registrations until both have reached it: both instances are past
            // every check made before Apple, as when the two requests come at the same moment.
            cluster.gateway.holdRegistrations()
            let calls = [(cluster.a, "ACME", "acme-one.example"), (cluster.b, "acme", "acme-two.example")].map { instance, id, domain in
                Task {
                    try await instance.send(
                        "POST", "/admin/merchants",
                        body: Array(
                            #"{"partnerInternalMerchantIdentifier": "\#(id)", "partnerMerchantName": "Acme", "domainNames": ["\#(domain)"]}"#
                                .utf8),
                        admin: true)
                }
            }
            #expect(try await Eventually.until { cluster.gateway.heldRegistrationCount == 2 })
            cluster.gateway.releaseRegistrations()
            var answers: [CurlResponse] = []
            for call in calls { answers.append(try await call.value) }
            let statuses = answers.map(\.status).sorted()
            #expect(statuses == [201, 409], "\(answers.map { "\($0.status) \(String(decoding: $0.body, as: UTF8.self))" })")
            let refused = try #require(answers.first { $0.status == 409 })
            #expect((refused.json?["error"] as? [String: Any])?["code"] as? String == "identifier_taken")
            let message = (refused.json?["error"] as? [String: Any])?["message"] as? String ?? ""
            #expect(message.contains("only in letter case") && message.contains("was undone"), "\(message)")
            // Either instance lists the winner alone once it has synced the registry (every 2 s).
            var registered: [String] = []
            #expect(
                try await Eventually.until {
                    let listed = try await cluster.a.send("GET", "/admin/merchants", admin: true)
                    registered = (listed.json?["registered"] as? [[String: Any]])?.compactMap { $0["partnerIdentifier"] as? String } ?? []
                    return !registered.isEmpty
                })
            #expect(registered.count == 1 && ["ACME", "acme"].contains(registered.first ?? ""), "\(registered)")
            // Apple keeps the winner's domains only.
            let atApple = cluster.gateway.partnerMerchants.filter { !$0.value.domainNames.isEmpty }.map(\.key)
            #expect(atApple == registered, "\(atApple) at Apple, \(registered) here")
        }
    }
}
