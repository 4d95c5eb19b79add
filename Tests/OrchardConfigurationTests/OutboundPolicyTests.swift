import ApplePay
import Crypto
import Foundation
import Logging
import OrchardConfigurationTesting
import OrchardCore
import OrchardTesting
import ProcessorClients
import Testing

@testable import OrchardConfiguration
@testable import OrchardServices

/// The outbound settings a configuration file and stored settings give: which networks and test
/// processors registered merchants may reach (the policy itself is OrchardCoreTests'
/// OutboundDestinationTests).
@Suite("Outbound settings: registered merchants' networks and test processors, from the file only")
struct OutboundPolicyTests {
    @Test("outbound.registeredMerchants is read from the file only; a bad or misspelt entry stops startup naming it")
    func configuration() throws {
        let defaults = try LimitsConfigurationTests.resolve()
        #expect(
            defaults.outbound.tenants.privateNetworks.isEmpty && defaults.outbound.tenantTestProcessors.isEmpty, "public only by default")
        let read = try LimitsConfigurationTests.resolve { file in
            file.outbound = .init(
                registeredMerchants: .init(
                    privateNetworks: ["127.0.0.0/8", "::1"], testProcessors: [.init(baseURL: "https://127.0.0.1:9443/", caFile: "ca.pem")]))
        }
        #expect(read.outbound.tenants.privateNetworks.map(\.description) == ["127.0.0.0/8", "0:0:0:0:0:0:0:1/128"])
        #expect(read.outbound.tenantTestProcessors.map(\.baseURL) == ["https://127.0.0.1:9443"])
        #expect(read.outbound.tenantTestProcessors.first?.trust == .caPEM(TestMaterial.shared.caPEM))
        let logs = CapturingLogHandler()
        logStartup(read, time: .system, logger: Logger(label: "test") { _ in logs })
        #expect(
            logs.warnings(containing: "outbound.registeredMerchants.privateNetworks").map { $0.metadata["network"] } == [
                "127.0.0.0/8", "0:0:0:0:0:0:0:1/128",
            ])
        #expect(
            logs.warnings(containing: "outbound.registeredMerchants.testProcessors").map { $0.metadata["baseURL"] } == [
                "https://127.0.0.1:9443"
            ])
        let cases: [(String, ConfigurationFile.Outbound.RegisteredMerchants)] = [
            ("outbound.registeredMerchants.privateNetworks: intranet", .init(privateNetworks: ["intranet"])),
            ("outbound.registeredMerchants.testProcessors[0].baseURL", .init(testProcessors: [.init(baseURL: "http://127.0.0.1:9443")])),
            (
                "outbound.registeredMerchants.testProcessors[1].baseURL",
                .init(testProcessors: [.init(baseURL: "https://a.test"), .init(baseURL: "https://b.test/v1")])
            ),
            (
                "outbound.registeredMerchants.testProcessors[0].caFile",
                .init(testProcessors: [.init(baseURL: "https://a.test", caFile: "missing.pem")])
            ),
        ]
        for (setting, section) in cases {
            let message = LimitsConfigurationTests.refusal { $0.outbound = .init(registeredMerchants: section) }
            #expect(message?.contains(setting) == true, "\(setting): \(message ?? "accepted")")
        }
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let file = try TestConfiguration.file(gatewayPort: 1, directory: directory)
        var json = try #require(try JSONSerialization.jsonObject(with: try JSONEncoder().encode(file)) as? [String: Any])
        json["outbound"] = ["registeredMerchants": ["privateNetwork": ["127.0.0.0/8"]]]
        let path = directory.path("orchard.json")
        try JSONSerialization.data(withJSONObject: json).write(to: URL(fileURLWithPath: path))
        #expect {
            _ = try ConfigurationFile.load(path: path)
        } throws: { error in
            (error as? ConfigurationError)?.message.contains("outbound.registeredMerchants.privateNetwork: not a setting") == true
        }
    }

    @Test(
        "settings an older Orchard stored (a test processor with allowNonProductionHost and an inline CA, a private webhook) stop loading naming the field, until the file lists the origin and the network; the file's CA then counts"
    )
    func storedBefore() throws {
        var configuration = try LimitsConfigurationTests.resolve()
        configuration.processorDrivers = ProcessorFactory.drivers
        let vault = SettingsVault(key: SymmetricKey(size: .bits256))
        configuration.settingsVault = vault
        let origin = "https://127.0.0.1:9443"
        let old = MerchantSettingsFile(
            processor: ProcessorSection(
                type: "worldpay",
                [
                    "baseURL": .string(origin), "allowNonProductionHost": true, "caFile": "not the file's CA", "entity": "e",
                    "username": "u", "password": "p",
                ]),
            webhook: .init(url: "https://10.0.0.9/hook", secret: String(repeating: "s", count: 40)))
        let sealed = try vault.seal(old, partnerIdentifier: "tea")
        func loading() -> String? {
            do {
                _ = try configuration.openSettings(sealed, partnerIdentifier: "tea")
                return nil
            } catch {
                return error.message
            }
        }
        #expect(
            loading()?.contains("settings of tea: processor.allowNonProductionHost is not accepted") == true, "\(loading() ?? "loaded")")
        configuration.outbound.tenantTestProcessors = [
            RemoteEndpoint(
                baseURL: origin, trust: .caPEM(TestMaterial.shared.caPEM), connectTimeout: .seconds(3), timeout: .seconds(20),
                isProductionHost: false)
        ]
        #expect(
            loading()?.contains("settings of tea: webhook.url points at 10.0.0.9, not a public address") == true, "\(loading() ?? "loaded")"
        )
        configuration.outbound.tenants = TenantDestinations(privateNetworks: [try #require(IPNetwork("10.0.0.0/8"))])
        let loaded = try configuration.openSettings(sealed, partnerIdentifier: "tea")
        #expect(loaded.processor.endpoint?.trust == .caPEM(TestMaterial.shared.caPEM), "the file's CA, not the stored one")
        #expect(loaded.webhook?.chosenBy == .tenant)
        // The admin API still refuses the same keys for that listed origin.
        #expect(throws: ConfigurationError.self) { _ = try configuration.resolveSettings(old, partnerIdentifier: "tea") }
    }
}
