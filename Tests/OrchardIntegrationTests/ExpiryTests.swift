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

@Suite("Certificate expiry: /admin/health on the server's clock, refusal at startup")
struct ExpiryTests {
    static let platformProcessingExpiry = Date().addingTimeInterval(20 * 86_400)

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
