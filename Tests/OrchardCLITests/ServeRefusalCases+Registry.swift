import Foundation
import OrchardConfiguration
import OrchardCore
import OrchardRuntime
import OrchardSQLite
import OrchardServices

extension RefusalBench {
    /// The key the registry cases' settings are sealed with, and another.
    static let settingsKey = String(repeating: "5a", count: 32)
    static let otherSettingsKey = String(repeating: "a5", count: 32)
    static let tenantIdentifier = "merchant.dev.orchard.tenant"

    /// State folders whose SQLite store holds one registered merchant's settings, sealed by serve's
    /// own sealer under ``settingsKey`` (one folder per case: serve creates its vault key there).
    func seedRegistries() async throws {
        var json = JSONObject(try JSONSerialization.jsonObject(with: base) as? [String: Any] ?? [:])
        json.addPlatform { $0["settingsKey"] = "env:SETTINGS_KEY" }
        // The registered merchants' webhooks may be on 10/8 when they are set; the cases then forbid it.
        json["outbound"] = ["registeredMerchants": ["privateNetworks": ["10.0.0.0/8"]]]
        let path = file("registry-sealer.json")
        try JSONSerialization.data(withJSONObject: json.fields).write(to: URL(fileURLWithPath: path))
        let configuration = try ServerConfiguration.load(path: path, environment: ["SETTINGS_KEY": Self.settingsKey])
        guard let sealer = configuration.settingsSealer else { throw ConfigurationError("the sealing configuration has no settingsKey") }
        let privateWebhook = MerchantSettingsFile(
            webhook: .init(url: "https://10.1.2.3/orchard/webhooks", secret: String(repeating: "s", count: 40)))
        for (folder, settings) in [
            ("registry-no-key", MerchantSettingsFile()), ("registry-other-key", MerchantSettingsFile()),
            ("registry-private-webhook", privateWebhook),
        ] {
            // Checked as the admin API checks them, then sealed: what serve stored.
            _ = try sealer.check(settings, partnerIdentifier: Self.tenantIdentifier)
            let sealed = try sealer.seal(settings, partnerIdentifier: Self.tenantIdentifier)
            try FileManager.default.createDirectory(atPath: file(folder), withIntermediateDirectories: true)
            let store = try SQLiteStore(path: file("\(folder)/orchard.sqlite"))
            try await store.saveSealedMerchantSettings(partnerIdentifier: Self.tenantIdentifier, sealed: sealed, at: Date())
        }
    }
}

extension RefusalCase {
    /// What serve refuses once its store is open: the registered merchants' settings it holds.
    static let registryCases: [RefusalCase] = [
        .edit("sealed registered settings, platformIntegrator.settingsKey removed") { json, _ in
            json["stateDirectory"] = "registry-no-key"
            json.addPlatform()
        },
        .edit(
            "sealed registered settings, platformIntegrator.settingsKey changed",
            environment: ["SETTINGS_KEY": RefusalBench.otherSettingsKey]
        ) { json, _ in
            json["stateDirectory"] = "registry-other-key"
            json.addPlatform { $0["settingsKey"] = "env:SETTINGS_KEY" }
        },
        .edit(
            "sealed registered settings whose webhook is on a network no longer allowed",
            environment: ["SETTINGS_KEY": RefusalBench.settingsKey]
        ) { json, _ in
            json["stateDirectory"] = "registry-private-webhook"
            json.addPlatform { $0["settingsKey"] = "env:SETTINGS_KEY" }
        },
    ]
}
