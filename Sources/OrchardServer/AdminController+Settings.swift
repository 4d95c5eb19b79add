import ApplePay
import Foundation
import Hummingbird
import Logging
import OrchardCore

/// A registered merchant's processor and webhook, sealed at rest: `/admin/merchants/{id}/settings`.
extension AdminController {
    /// Settings as the admin API shows them: never a secret.
    struct SettingsView: ResponseEncodable {
        var partnerIdentifier: String
        var processor: String
        var processorBaseURL: String?
        var webhookURL: String?
    }

    func addSettingsRoutes(to admin: RouteCollection<OrchardRequestContext>) {
        admin.putJSON("merchants/{id}/settings") { request, context in
            try await setSettings(request, id: try Self.partnerIdentifier(context), context: context)
        }
        admin.get("merchants/{id}/settings") { _, context in
            let id = try Self.partnerIdentifier(context)
            guard directory.registrations.contains(where: { $0.partnerIdentifier == id }) else {
                throw OrchardError(.notFound, "no merchant \(id) is registered on this server")
            }
            return Self.view(id, directory.settings[id])
        }
    }

    /// Checks, seals, stores and applies a registered merchant's settings; nothing changes on any refusal.
    func setSettings(_ request: Request, id: String, context: OrchardRequestContext) async throws -> SettingsView {
        guard let vault = configuration.settingsVault else {
            throw OrchardError(
                .platformNotConfigured,
                "registered merchants' settings are sealed at rest: set platformIntegrator.settingsKey (64 hex digits, env: or a file) first"
            )
        }
        guard directory.registrations.contains(where: { $0.partnerIdentifier == id }) else {
            throw OrchardError(.notFound, "no merchant \(id) is registered on this server")
        }
        let file = try await request.decode(as: MerchantSettingsFile.self, context: context)
        let settings: MerchantSettings
        do {
            settings = try configuration.resolveSettings(file, partnerIdentifier: id)
        } catch {
            throw OrchardError(.invalidRequest, error.message)
        }
        do {
            try await store.saveSealedMerchantSettings(
                partnerIdentifier: id, sealed: try vault.seal(file, partnerIdentifier: id), at: time.now)
        } catch {
            throw OrchardError(.internalError, "the settings could not be stored; nothing changed")
        }
        directory.setSettings(settings, forPartner: id)
        processors.setRegistered(processorMaker?.processor(for: settings.processor), forMerchant: id)
        context.logger.info(
            "registered merchant's settings changed",
            metadata: ["partner": "\(id)", "processor": "\(settings.processor.type)", "webhook": "\(settings.webhook != nil)"])
        return Self.view(id, settings)
    }

    static func view(_ id: String, _ settings: MerchantSettings?) -> SettingsView {
        SettingsView(
            partnerIdentifier: id, processor: settings?.processor.type ?? "record", processorBaseURL: settings?.processor.endpoint?.baseURL,
            webhookURL: settings?.webhook?.url)
    }
}
