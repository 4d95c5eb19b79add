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
        let path = file("registry-sealer.json")
        try JSONSerialization.data(withJSONObject: json.fields).write(to: URL(fileURLWithPath: path))
        let configuration = try ServerConfiguration.load(path: path, environment: ["SETTINGS_KEY": Self.settingsKey])
        guard let sealer = configuration.settingsSealer else { throw ConfigurationError("the sealing configuration has no settingsKey") }
        let sealed = try sealer.seal(MerchantSettingsFile(), partnerIdentifier: Self.tenantIdentifier)
        for folder in ["registry-no-key", "registry-other-key"] {
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
    ]
}
