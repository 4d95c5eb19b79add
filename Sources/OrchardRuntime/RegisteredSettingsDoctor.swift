import Foundation
import Logging
import OrchardConfiguration
import OrchardCore
import OrchardPostgres
import OrchardSQLite
import OrchardServices

/// `orchard doctor`'s look at the registered merchants' settings the store holds, by serve's own
/// ``ServerConfiguration/loadRegisteredSettings(store:)``: serve does not start when they are
/// sealed but `platformIntegrator.settingsKey` is missing or another key, or when one no longer
/// checks. The store is opened as it is, nothing created or migrated; `store` is the running
/// server's own (`GET /admin/doctor`).
func registeredSettingsDoctorCheck(_ configuration: ServerConfiguration, store: (any MerchantRegistry)? = nil) async -> DoctorCheck {
    if let store { return await registeredSettingsCheck(configuration, store: store) }
    switch configuration.store {
    case .sqlite:
        let path = URL(fileURLWithPath: configuration.stateDirectory).appendingPathComponent("orchard.sqlite").path
        let opened: SQLiteStore?
        do {
            opened = try SQLiteStore.existing(path: path)
        } catch {
            return registeredSettingsLine(passed: false, detail: "\(path) cannot be read: \(error)")
        }
        guard let opened else { return registeredSettingsLine(passed: true, detail: noneYet) }
        return await registeredSettingsCheck(configuration, store: opened)
    case .postgres(let settings):
        var logger = Logger(label: "orchard.doctor")
        logger.logLevel = .critical
        do {
            guard let opened = try await PostgresStore.existing(settings, logger: logger) else {
                return registeredSettingsLine(passed: true, detail: noneYet)
            }
            return try await opened.withRunning { await registeredSettingsCheck(configuration, store: $0) }
        } catch {
            // In serve's words (``ServerConfiguration/openStore(logger:)``).
            let message = (error as? ConfigurationError)?.message ?? "\(error)"
            return registeredSettingsLine(passed: false, detail: "store.postgres: \(message)")
        }
    }
}

private let noneYet = "no registered merchants yet"

/// Serve's load of the settings `store` holds, as a line: ✗ with serve's refusal.
private func registeredSettingsCheck(_ configuration: ServerConfiguration, store: any MerchantRegistry) async -> DoctorCheck {
    do {
        let count = try await configuration.loadRegisteredSettings(store: store).count
        return registeredSettingsLine(
            passed: true,
            detail: count == 0
                ? noneYet
                : "the settings of \(count) registered merchant\(count == 1 ? "" : "s") open with platformIntegrator.settingsKey and check")
    } catch {
        return registeredSettingsLine(passed: false, detail: error.message)
    }
}

private func registeredSettingsLine(passed: Bool, detail: String) -> DoctorCheck {
    DoctorCheck(subject: "store", check: "registered settings", passed: passed, detail: detail)
}
