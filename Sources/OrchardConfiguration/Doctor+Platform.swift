import OrchardCore
import OrchardServices

/// The platform integrator's own line beyond those it shares with merchants: the key sealing
/// registered merchants' settings.
extension Doctor {
    /// `platformIntegrator.settingsKey` read as the loader reads it.
    func settingsKeyCheck(_ platform: ConfigurationFile.PlatformIntegrator, values: ConfigurationValues) -> DoctorCheck {
        let subject = Self.platformSubject(platform.merchantIdentifier)
        guard let value = platform.settingsKey else { return settingsKeyCheck(loaded: false, subject: subject) }
        do {
            _ = try ServerConfiguration.loadSettingsVault(value, values: values)
            return settingsKeyCheck(loaded: true, subject: subject)
        } catch {
            return DoctorCheck(subject: subject, check: "settings key", passed: false, detail: error.message)
        }
    }

    /// The settings key's line once it is read (or absent, which serve accepts).
    func settingsKeyCheck(loaded: Bool, subject: String) -> DoctorCheck {
        DoctorCheck(
            subject: subject, check: "settings key", passed: true,
            detail: loaded
                ? "registered merchants' processor and webhook settings are sealed with it at rest"
                : "no settingsKey: the admin API cannot set registered merchants' processor or webhook settings (generate one with: openssl rand -hex 32)"
        )
    }
}
