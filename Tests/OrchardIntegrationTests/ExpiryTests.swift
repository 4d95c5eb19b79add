import ApplePay
import Foundation
import Logging
import OrchardConfiguration
import OrchardCore
import OrchardInMemory
import OrchardIntegrationTesting
import OrchardServer
import OrchardServerTesting
import OrchardServices
import OrchardTesting
import Synchronization
import Testing
import X509

@Suite("Certificate expiry: /health, the guard warnings on an injected clock, refusal at startup")
struct ExpiryTests {
    static let platformProcessingExpiry = Date().addingTimeInterval(20 * 86_400)

    @Test("the guard warns once per stage for certificates under 30 days, and only those, on an injected clock")
    func guardWarnsOncePerStage() async throws {
        let pki = TestMaterial.shared.pki
        let now = Date()
        let soon = try pki.issueMerchantIdentity(
            merchantIdentifier: "merchant.soon", notValidAfter: now.addingTimeInterval(10 * 86_400 + 60))
        let later = try pki.issueMerchantIdentity(merchantIdentifier: "merchant.later", notValidAfter: now.addingTimeInterval(90 * 86_400))
        let handler = CapturingLogHandler()
        let clock = ManualClock()
        let store = InMemoryStore()
        let service = GuardService(
            records: store, probe: nil, tenantProbe: nil, registration: nil, registry: nil,
            policy: GuardPolicy(interval: 3600, recheck: 60),
            concurrency: 2, time: clock.source, logger: Logger(label: "test") { _ in handler })
        let watch = GuardWatch(
            domains: [],
            certificates: [("merchant.soon", soon), ("merchant.later", later)].map { owner, identity in
                GuardWatch.Certificate(
                    merchantIdentifier: owner, kind: .identityCertificate, target: identity.certificate.serialNumber.description,
                    notValidAfter: identity.certificate.notValidAfter)
            }, registrations: [], platformIdentifier: nil)
        try await service.pass(watch)
        clock.advance(3600)
        try await service.pass(watch)
        let warnings = handler.warnings(containing: "certificate expiring")
        #expect(warnings.count == 1, "once for the stage, not once per check")
        #expect(warnings.first?.metadata["merchant"] == "merchant.soon")
        #expect(warnings.first?.metadata["detail"]?.contains("days): renew it now") == true)
        #expect(try await store.guardRecords(merchantIdentifier: "merchant.later").map(\.state) == [.ok])

        // The clock decides: 85 days on, the first has expired and the other warns.
        clock.advance(85 * 86_400)
        try await service.pass(watch)
        #expect(handler.warnings(containing: "certificate expiring").count == 2)
        #expect(handler.records.withLock { $0.filter { $0.level == .error && $0.metadata["event"] == "certificate.expired" }.count } == 1)
    }

    @Test("/admin/health lists every identity and processing certificate with its days left, on the server's clock")
    func health() async throws {
        try await ServerHarness.with(
            otherMockMerchants: MoreMerchants.mockMerchants, environment: MoreMerchants.environment, time: .fixed(Date()),
            configure: { file, directory in
                try MoreMerchants.addSecondMerchant(&file, directory)
                try MoreMerchants.addPlatform(&file, directory, processingCertificateValidUntil: Self.platformProcessingExpiry)
                MoreMerchants.addAdmin(&file)
            }
        ) { server in
            #expect(try await server.send("GET", "/health").json?.keys.sorted() == ["status"], "the public route has no detail")
            let health = try #require(try await server.send("GET", "/admin/health", extraHeaders: MoreMerchants.authorization).json)
            #expect(health["status"] as? String == "certificates_expiring")
            let certificates = try #require(health["certificates"] as? [[String: Any]])
            let summary = certificates.map { "\($0["owner"] as? String ?? "") \($0["kind"] as? String ?? "")" }
            #expect(
                summary == [
                    "\(TestMaterial.merchantIdentifier) identity", "\(TestMaterial.secondMerchantIdentifier) identity",
                    "platform \(TestMaterial.platformMerchantIdentifier) identity",
                    "platform \(TestMaterial.platformMerchantIdentifier) processing",
                ])
            let processing = try #require(certificates.last)
            #expect((processing["daysLeft"] as? Int).map { (19...20).contains($0) } == true)
        }
    }

    @Test("an expired processing certificate stops startup with one line naming the file")
    func expiredProcessingCertificate() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        var file = try ServerHarness.configurationFile(gatewayPort: 1, directory: directory)
        try MoreMerchants.addPlatform(&file, directory, processingCertificateValidUntil: Date().addingTimeInterval(-86_400))
        #expect {
            try ServerConfiguration.resolve(file, relativeTo: directory.url.path)
        } throws: { error in
            let message = (error as? ConfigurationError)?.message ?? ""
            return message.contains("platform-processing.pem") && message.contains("expired")
        }
    }
}
