import OrchardCore
import OrchardTesting
import ProcessorClients
import Testing

/// `livemode` (`GET /v1/merchant`) is known by the host a processor is called on: its production
/// host only, on port 443; its test host, a mock and `record` are not live.
@Suite("Processor livemode")
struct LivemodeTests {
    func settings(_ kind: MockProcessorSetup.Kind, baseURL: String?) throws -> any ProcessorSettings {
        var section = MockProcessorSetup.section(kind, baseURL: baseURL ?? "")
        section["caFile"] = nil
        section["allowNonProductionHost"] = nil
        section["baseURL"] = baseURL.map { .string($0) }
        if let baseURL, !WorldpaySettings.hosts.contains(where: { baseURL == "https://\($0)" }),
            !WorldlineSettings.hosts.contains(where: { baseURL == "https://\($0)" })
        {
            section["allowNonProductionHost"] = true
        }
        let driver: any ProcessorDriver = kind == .worldpay ? WorldpayDriver() : WorldlineDriver()
        return try driver.settings(from: section, values: MandateFixture.Values())
    }

    @Test("Worldpay is live on access.worldpay.com (its default) only")
    func worldpay() throws {
        #expect(try settings(.worldpay, baseURL: nil).livemode)
        #expect(try settings(.worldpay, baseURL: "https://access.worldpay.com").livemode)
        #expect(try !settings(.worldpay, baseURL: "https://try.access.worldpay.com").livemode)
        #expect(try !settings(.worldpay, baseURL: "https://access.worldpay.com:8443").livemode)
        #expect(try !settings(.worldpay, baseURL: "https://127.0.0.1:9443").livemode)
    }

    @Test("Worldline is live on payment.direct.worldline-solutions.com only; record never is")
    func worldlineAndRecord() throws {
        #expect(try settings(.worldlineEncrypted, baseURL: nil).livemode)
        #expect(try !settings(.worldlineEncrypted, baseURL: "https://payment.preprod.direct.worldline-solutions.com").livemode)
        #expect(try !settings(.worldlineDecrypted, baseURL: "https://localhost:9443").livemode)
        #expect(!RecordOnlySettings().livemode)
    }
}
