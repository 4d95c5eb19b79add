import AppleGateway
import ApplePay
import CurlClient
import Foundation
import Logging
import OrchardConfiguration
import OrchardCore
import OrchardIntegrationTesting
import OrchardServer
import OrchardServerTesting
import OrchardServices
import OrchardTesting
import Testing
import X509

/// The guard end to end: a loopback HTTPS host stands in for the shop's domains, the mock gateway
/// for Apple, the SQLite store of a running server holds the records, and `/admin/guard` shows
/// them. Time is a manual clock; TLS checks certificates on the real one, so the domain
/// certificates are minted relative to the real time.
@Suite("The guard: each failure found within one interval, shown in /admin/guard, reported by exactly one event and restored once")
struct GuardTests {
    static let domains = [ServerHarness.domain, ServerHarness.unregisteredDomain, RegisteredMerchantPaymentTests.domain]
    static let interval: TimeInterval = 900
    static let recheck: TimeInterval = 60

    static func identity(days: Double) throws -> TestCertificate {
        let end = Date(timeIntervalSince1970: (Date().timeIntervalSince1970 + days * 86_400).rounded(.down))
        return try TestMaterial.shared.pki.issueServerCertificate(hosts: domains, now: Date(), notValidAfter: end)
    }

    /// A started host serving `pages`, the guard over `server`'s store, probing every test domain there.
    struct Rig {
        let host: MockDomainHost
        let service: GuardService
        let clock: ManualClock
        let server: ServerHarness

        /// Moves the clock on by `seconds`, then runs one pass over the registry as stored now.
        func pass(after seconds: TimeInterval) async {
            clock.advance(seconds)
            let registered = (try? await server.store.registeredMerchants()) ?? []
            let directory = MerchantDirectory(configuration: server.configuration, registered: registered, settings: [:])
            await GuardMonitor(
                service: service, directory: directory, records: server.store, time: clock.source,
                logger: Logger(label: "orchard.guard-test")
            ).pass()
        }

        func events(_ type: WebhookEventType) async throws -> [WebhookEvent] {
            try await server.store.webhookEvents(merchantIdentifier: nil, state: nil, limit: 1000).filter { $0.type == type }
        }

        func record(_ kind: GuardCheckKind, _ target: String) async throws -> GuardRecord? {
            try await server.store.guardRecords(merchantIdentifier: nil).first { $0.subject.kind == kind && $0.subject.target == target }
        }

        func admin(_ query: String) async throws -> [[String: Any]] {
            let answer = try await server.send("GET", "/admin/guard" + query, extraHeaders: MoreMerchants.authorization)
            #expect(answer.status == 200)
            return answer.json?["records"] as? [[String: Any]] ?? []
        }
    }

    static let platformSecret = String(repeating: "p", count: 40)

    static func with(
        registration: Bool = false, platformWebhook: MockWebhookReceiver? = nil, logHandler: (any LogHandler)? = nil,
        _ body: (Rig) async throws -> Void
    ) async throws {
        let host = try MockDomainHost(
            serverIdentity: try identity(days: 90),
            pages: [
                ServerHarness.domain: .file(ServerHarness.associationFile, contentType: "text/plain"),
                ServerHarness.unregisteredDomain: .file(ServerHarness.associationFile, contentType: "text/plain"),
                RegisteredMerchantPaymentTests.domain: .file(MoreMerchants.platformAssociation, contentType: "text/plain"),
            ])
        let port = try await host.start()
        let http = try CurlHTTPClient()
        // The server's clock too: its webhook dispatcher sends the guard's events when they are due on it.
        let clock = ManualClock()
        try await ServerHarness.with(
            otherMockMerchants: MoreMerchants.mockMerchants,
            environment: MoreMerchants.environment.merging(["PLATFORM_WEBHOOK_SECRET": platformSecret]) { $1 }, time: clock.source,
            logHandler: logHandler, callsShops: platformWebhook != nil,
            configure: { file, directory in
                MoreMerchants.addAdmin(&file)
                if registration { try MoreMerchants.addPlatform(&file, directory) }
                if let platformWebhook {
                    file.platformIntegrator?.webhook = .init(url: platformWebhook.url, secret: "env:PLATFORM_WEBHOOK_SECRET")
                    file.webhooks = .init(pollIntervalMilliseconds: 100)
                }
                // This test runs the passes itself, on its own clock.
                file.guard = .init(enabled: false)
            }
        ) { server in
            let probe = CurlDomainProbe(
                http: http, trust: .caPEM(TestMaterial.shared.caPEM),
                connectTo: Dictionary(uniqueKeysWithValues: domains.map { ($0, "https://127.0.0.1:\(port)") }))
            let logger = Logger(label: "orchard.guard-test")
            let service = GuardService(
                records: server.store, probe: probe, tenantProbe: probe, signer: server.vault.domainFileSigner,
                registration: server.configuration.platform.map {
                    AppleRegistrationClient(http: http, endpoint: server.configuration.gateway, platform: $0, logger: logger)
                }, registry: server.store,
                policy: GuardPolicy(interval: interval, recheck: recheck), concurrency: 2, time: clock.source, logger: logger)
            try await body(Rig(host: host, service: service, clock: clock, server: server))
        }
        http.shutdown()
        await host.stop()
    }

    @Test("on by default, the server's own guard checks what it holds and /admin/guard shows it")
    func runsWithTheServer() async throws {
        try await ServerHarness.with(
            environment: MoreMerchants.environment,
            configure: { file, _ in
                MoreMerchants.addAdmin(&file)
                file.guard = nil
            }
        ) { server in
            #expect(server.configuration.guardSettings.enabled)
            let identity = TestMaterial.shared.identity.certificate.serialNumber.description
            let found = try await Eventually.value(timeout: .seconds(60)) { () async throws -> [[String: Any]]? in
                let answer = try await server.send("GET", "/admin/guard", extraHeaders: MoreMerchants.authorization)
                let records = answer.json?["records"] as? [[String: Any]] ?? []
                return records.contains { $0["target"] as? String == identity && $0["state"] as? String == "ok" } ? records : nil
            }
            let records = try #require(found)
            // This harness gives the server no domain probe: its domains stay unchecked, never failing.
            #expect(records.contains { $0["check"] as? String == "domain_file" && $0["state"] as? String == "pending" })
            #expect(try await server.send("GET", "/admin/guard?state=broken", extraHeaders: MoreMerchants.authorization).status == 400)
            #expect(try await server.send("GET", "/admin/guard").status == 401)
            // Orchard's own answer carries the signature the guard tells it by: keyed, and for this domain only.
            let association = try await server.send("GET", "/.well-known/apple-developer-merchantid-domain-association")
            let signature = association.header(DomainFileSigner.headerName)
            let signer = server.vault.domainFileSigner
            #expect(signer.signs(signature, bytes: ServerHarness.associationFile, domain: ServerHarness.domain))
            #expect(!signer.signs(signature, bytes: ServerHarness.associationFile, domain: ServerHarness.unregisteredDomain))
            #expect(!DomainFileSigner.random().signs(signature, bytes: ServerHarness.associationFile, domain: ServerHarness.domain))
            #expect(association.header("Repr-Digest") == nil)
        }
    }

    @Test("a redirect, a WAF's 403 and other bytes: each found within one interval, one failed event, one restored event")
    func domainFailures() async throws {
        try await Self.with { rig in
            await rig.pass(after: 0)
            let file = try #require(try await rig.record(.domainFile, ServerHarness.domain))
            #expect(file.state == .ok)
            #expect(try await rig.record(.domainCertificate, ServerHarness.domain)?.state == .ok)
            #expect(
                try await rig.record(.identityCertificate, TestMaterial.shared.identity.certificate.serialNumber.description)?.state == .ok)

            let failures: [(MockDomainHost.Page, String)] = [
                (.redirect("https://www.shop.example/"), "redirects (HTTP 301)"),
                (.response(status: 403, headers: [(name: "Content-Type", value: "text/html")], body: Array("denied".utf8)), "HTTP 403"),
                (.file(Array("<html>app</html>".utf8), contentType: "text/html"), "differ from domainAssociationFile"),
            ]
            for (round, (page, phrase)) in failures.enumerated() {
                // The domain breaks just after a check: the guard must tell within one interval.
                let broke = rig.clock.now
                rig.host.setPage(page, for: ServerHarness.domain)
                var passes = 0
                while try await rig.record(.domainFile, ServerHarness.domain)?.state != .failing {
                    passes += 1
                    try #require(passes < 40, "never found failing")
                    await rig.pass(after: 30)
                }
                #expect(rig.clock.now.timeIntervalSince(broke) <= Self.interval)
                let failing = try #require(try await rig.admin("?state=failing").first { $0["target"] as? String == ServerHarness.domain })
                #expect((failing["detail"] as? String)?.contains(phrase) == true, "\(failing)")
                #expect(failing["firstFailureAt"] != nil && failing["checkedAt"] != nil)
                // Checked again and again while still failing: no further event.
                await rig.pass(after: Self.interval)
                await rig.pass(after: Self.interval)
                #expect(try await rig.events(.domainVerificationFailed).count == round + 1)

                rig.host.setPage(.file(ServerHarness.associationFile, contentType: "text/plain"), for: ServerHarness.domain)
                await rig.pass(after: Self.interval)
                await rig.pass(after: Self.interval)
                #expect(try await rig.record(.domainFile, ServerHarness.domain)?.state == .ok)
                #expect(try await rig.record(.domainFile, ServerHarness.domain)?.firstFailureAt == nil)
                #expect(try await rig.events(.domainVerificationRestored).count == round + 1)
            }
            // The other domain was never touched: never reported.
            let failed = try await rig.events(.domainVerificationFailed)
            #expect(failed.allSatisfy { String(decoding: $0.payload, as: UTF8.self).contains(ServerHarness.domain) })
            #expect(failed.allSatisfy { $0.merchantIdentifier == TestMaterial.merchantIdentifier })
        }
    }

    @Test("a domain certificate nearing its end: one warning at 30, 15 and 7 days, then one renewal")
    func domainCertificate() async throws {
        try await Self.with { rig in
            try rig.host.setServerIdentity(try Self.identity(days: 20))
            await rig.pass(after: 0)
            let record = try #require(try await rig.record(.domainCertificate, ServerHarness.domain))
            #expect(record.state == .expiring && record.stage == 30)
            #expect(record.detail.contains("19 days") || record.detail.contains("20 days"))
            await rig.pass(after: Self.interval)
            // Six days on (the clock; TLS still sees a valid certificate): 15-day warning.
            await rig.pass(after: 6 * 86_400)
            #expect(try await rig.record(.domainCertificate, ServerHarness.domain)?.stage == 15)
            await rig.pass(after: 8 * 86_400)
            #expect(try await rig.record(.domainCertificate, ServerHarness.domain)?.stage == 7)
            await rig.pass(after: Self.interval)
            // Both domains share the host's certificate: three warnings each, never more.
            let warnings = try await rig.events(.certificateExpiring)
            #expect(
                warnings.count(where: { String(decoding: $0.payload, as: UTF8.self).contains("\"target\":\"\(ServerHarness.domain)\"") })
                    == 3)
            #expect(try await rig.admin("?state=expiring").contains { $0["warningDays"] as? Int == 7 })

            // Expired: the handshake fails, the file cannot be fetched, and the certificate is reported expired once.
            try rig.host.setServerIdentity(try Self.identity(days: -1))
            await rig.pass(after: Self.interval)
            await rig.pass(after: Self.recheck)
            await rig.pass(after: Self.interval)
            let expired = try #require(try await rig.record(.domainCertificate, ServerHarness.domain))
            #expect(expired.state == .failing && expired.detail.contains("has expired"))
            #expect(try await rig.record(.domainFile, ServerHarness.domain)?.state == .failing)
            #expect(
                try await rig.events(.certificateExpired).count(where: {
                    String(decoding: $0.payload, as: UTF8.self).contains("\"target\":\"\(ServerHarness.domain)\"")
                }) == 1)

            try rig.host.setServerIdentity(try Self.identity(days: 365))
            await rig.pass(after: Self.interval)
            await rig.pass(after: Self.interval)
            #expect(try await rig.record(.domainCertificate, ServerHarness.domain)?.state == .ok)
            let renewed = try await rig.events(.certificateRenewed)
            #expect(
                renewed.count(where: { String(decoding: $0.payload, as: UTF8.self).contains("\"target\":\"\(ServerHarness.domain)\"") })
                    == 1)
        }
    }

    @Test("a domain removed from Apple's record is registered again by the guard, reported to merchant and platform once each")
    func registrationDrift() async throws {
        let receiver = MockWebhookReceiver(secret: Self.platformSecret)
        try await receiver.start()
        defer { Task { await receiver.stop() } }
        try await Self.with(registration: true, platformWebhook: receiver) { rig in
            let partner = "tea-house"
            let registered = try await rig.server.send(
                "POST", "/admin/merchants",
                body: Array(
                    #"{"partnerInternalMerchantIdentifier": "\#(partner)", "partnerMerchantName": "Tea House", "domainNames": ["\#(RegisteredMerchantPaymentTests.domain)"]}"#
                        .utf8), extraHeaders: MoreMerchants.authorization)
            #expect(registered.status == 201)
            await rig.pass(after: 0)
            #expect(try await rig.record(.registration, partner)?.state == .ok)
            #expect(try await rig.record(.domainFile, RegisteredMerchantPaymentTests.domain)?.state == .ok)

            #expect(rig.server.gateway.dropRegisteredDomain(RegisteredMerchantPaymentTests.domain, partner: partner))
            let calls = rig.server.gateway.receivedRegistrationCalls.count
            await rig.pass(after: Self.interval)
            let drift = try #require(try await rig.record(.registration, partner))
            #expect(drift.state == .failing && drift.repairs == 1)
            #expect(drift.detail.contains("registered them again"))
            #expect(rig.server.gateway.partnerMerchants[partner]?.domainNames == [RegisteredMerchantPaymentTests.domain])
            #expect(rig.server.gateway.receivedRegistrationCalls.count > calls)
            let reported = try await rig.events(.registrationDrift)
            #expect(Set(reported.map(\.merchantIdentifier)) == [partner, TestMaterial.platformMerchantIdentifier] && reported.count == 2)

            await rig.pass(after: Self.recheck)
            #expect(try await rig.record(.registration, partner)?.state == .ok)
            await rig.pass(after: Self.interval)
            #expect(try await rig.events(.registrationRestored).count == 2)
            #expect(try await rig.events(.registrationDrift).count == 2)
            // The platform's copies reach its own endpoint, signed with its secret (the partner has none: skipped).
            let delivered = try await receiver.wait { $0.filter { $0.type.hasPrefix("registration.") }.count >= 2 }
            #expect(delivered.filter { $0.type.hasPrefix("registration.") }.map(\.type) == ["registration.drift", "registration.restored"])
            // Signed on the server's clock, which this test moved on: checked against it.
            #expect(
                delivered.allSatisfy {
                    WebhookSignature.verify(
                        header: $0.signature, body: $0.body, secret: Secret(Self.platformSecret), now: rig.clock.now, tolerance: 3600)
                })
            let guarded = delivered.first?.json?["data"] as? [String: Any]
            #expect((guarded?["guard"] as? [String: Any])?["target"] as? String == partner)
        }
    }
}
