import ApplePay
import Foundation
import Hummingbird
import Logging
import OrchardCore
import OrchardServices

/// A registered merchant's processor, webhook, quote URL and Wallet orders, sealed at rest: `/admin/merchants/{id}/settings`.
extension AdminController {
    /// Settings as the admin API shows them: never a secret.
    struct SettingsView: ResponseEncodable {
        var partnerIdentifier: String
        var processor: String
        var processorBaseURL: String?
        var webhookURL: String?
        /// The Order Type ID of its Wallet orders, when it has them.
        var orderTypeIdentifier: String?
    }

    func addSettingsRoutes(to admin: RouteCollection<OrchardRequestContext>) {
        admin.putJSON("merchants/{id}/settings") { request, context in
            let id = try Self.partnerIdentifier(context)
            let settings = try await registry.setSettings(
                of: id, sealer: sealer, { try await request.decode(as: MerchantSettingsFile.self, context: context) },
                logger: context.logger)
            return Self.view(id, settings)
        }
        admin.get("merchants/{id}/settings") { _, context in
            let id = try Self.partnerIdentifier(context)
            return Self.view(id, try registry.settings(of: id))
        }
    }

    static func view(_ id: String, _ settings: MerchantSettings?) -> SettingsView {
        SettingsView(
            partnerIdentifier: id, processor: settings?.processor.type ?? "record", processorBaseURL: settings?.processor.endpoint?.baseURL,
            webhookURL: settings?.webhook?.url, orderTypeIdentifier: settings?.walletOrders?.orderTypeIdentifier)
    }
}
