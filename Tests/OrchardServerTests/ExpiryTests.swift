import ApplePay
import Foundation
import Logging
import OrchardCore
import OrchardServer
import OrchardTesting
import Synchronization
import Testing
import X509

/// Keeps every log record, for tests that assert what was logged.
final class CapturingLogHandler: LogHandler, Sendable {
    struct Record: Sendable {
        var level: Logger.Level
        var message: String
        var metadata: [String: String]
    }

    let records = Mutex<[Record]>([])
    var metadata: Logger.Metadata {
        get { [:] }
        set {}
    }
    var logLevel: Logger.Level {
        get { .trace }
        set {}
    }

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { nil }
        set {}
    }

    func log(event: LogEvent) {
        let record = Record(
            level: event.level, message: event.message.description,
            metadata: (event.metadata ?? [:]).mapValues { "\($0)" })
        records.withLock { $0.append(record) }
    }

    func warnings(containing text: String) -> [Record] {
        records.withLock { $0.filter { $0.level == .warning && $0.message.contains(text) } }
    }
}

@Suite("Certificate expiry: /health, daily warnings on an injected clock, refusal at startup")
struct ExpiryTests {
    static let platformProcessingExpiry = Date().addingTimeInterval(20 * 86_400)

    @Test("the monitor warns at start and at every interval for certificates under 30 days, and only those")
    func monitorWarnsRepeatedly() async throws {
        let pki = TestMaterial.shared.pki
        let now = Date()
        let soon = try pki.issueMerchantIdentity(
            merchantIdentifier: "merchant.soon", notValidAfter: now.addingTimeInterval(10 * 86_400 + 60))
        let later = try pki.issueMerchantIdentity(merchantIdentifier: "merchant.later", notValidAfter: now.addingTimeInterval(90 * 86_400))
        let handler = CapturingLogHandler()
        let monitor = CertificateExpiryMonitor(
            certificates: [
                ConfiguredCertificate(owner: "merchant.soon", kind: "identity", source: nil, certificate: soon.certificate),
                ConfiguredCertificate(owner: "merchant.later", kind: "identity", source: nil, certificate: later.certificate),
            ], time: .fixed(now), interval: .milliseconds(50), logger: Logger(label: "test") { _ in handler })
        let task = Task { try await monitor.run() }
        // Wait for three rounds (start + two intervals). The deadline only bounds a broken monitor: with
        // the whole suite queued on two cores, the monitor's task has been seen to start after 20 s.
        _ = try await Eventually.until(timeout: .seconds(90)) { handler.warnings(containing: "expires soon").count >= 3 }
        task.cancel()
        _ = try? await task.value
        let warnings = handler.warnings(containing: "expires soon")
        #expect(warnings.count >= 3, "one at start, then one per interval")
        #expect(warnings.allSatisfy { $0.metadata["owner"] == "merchant.soon" && $0.metadata["daysLeft"] == "10" })

        // The clock decides: 85 days on, the other certificate warns instead.
        let later85 = CertificateExpiryMonitor(
            certificates: [ConfiguredCertificate(owner: "merchant.later", kind: "identity", source: nil, certificate: later.certificate)],
            time: .fixed(now.addingTimeInterval(85 * 86_400)), interval: .seconds(3600), logger: Logger(label: "test") { _ in handler })
        #expect(later85.check().map { $0.owner } == ["merchant.later"])
        #expect(monitor.check().map { $0.owner } == ["merchant.soon"])
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
