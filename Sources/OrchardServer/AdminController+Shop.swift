import ApplePay
import Foundation
import Hummingbird
import Logging
import OrchardCore

/// The admin API's part of the payments API: a registered merchant's processor and webhook
/// (sealed at rest), every merchant's API keys, and the webhook outbox.
extension AdminController {
    /// Settings as the admin API shows them: never a secret.
    struct SettingsView: ResponseEncodable {
        var partnerIdentifier: String
        var processor: String
        var processorBaseURL: String?
        var webhookURL: String?
    }

    struct KeyView: ResponseEncodable {
        var id: String
        var merchantIdentifier: String
        var createdAt: Date
        var revokedAt: Date?
        /// Only in the answer that creates the key.
        var secret: String?

        init(_ key: APIKeyRecord, secret: String? = nil) {
            id = key.id
            merchantIdentifier = key.merchantIdentifier
            createdAt = key.createdAt
            revokedAt = key.revokedAt
            self.secret = secret
        }
    }

    struct KeyList: ResponseEncodable { var keys: [KeyView] }

    struct EventView: ResponseEncodable {
        var event: WebhookEvent
        /// The body as sent, for reading.
        var payload: String
    }

    struct EventList: ResponseEncodable { var events: [EventView] }

    func addShopRoutes(to admin: RouteCollection<OrchardRequestContext>) {
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
        admin.post("merchants/{id}/api-keys") { _, context in
            let id = try Self.partnerIdentifier(context)
            guard directory.merchant(identifier: id) != nil else { throw OrchardError(.notFound, "there is no merchant \(id)") }
            let (record, secret) = APIKeyRecord.generate(merchantIdentifier: id, at: time.now)
            do {
                try await store.insertAPIKey(record)
            } catch let error as BusinessRefusal where error.code == .limitReached {
                throw OrchardError(.tooManyKeys, error.message)
            }
            return EditedResponse(status: .created, response: KeyView(record, secret: secret))
        }
        admin.get("merchants/{id}/api-keys") { _, context in
            KeyList(keys: try await store.apiKeys(merchantIdentifier: try Self.partnerIdentifier(context)).map { KeyView($0) })
        }
        admin.delete("api-keys/{key}") { _, context in
            guard try await store.revokeAPIKey(id: try context.parameters.require("key"), at: time.now) else {
                throw OrchardError(.notFound, "there is no active API key \(try context.parameters.require("key"))")
            }
            return Response(status: .noContent)
        }
        admin.get("webhooks") { request, _ in
            let query = request.uri.queryParameters
            let state = try query["state"].map { raw in
                guard let state = WebhookEvent.DeliveryState(rawValue: String(raw)) else {
                    throw OrchardError(.invalidRequest, "state must be pending, delivered, failed or skipped")
                }
                return state
            }
            let limit = try query.adminLimit(default: 50)
            let events = try await store.webhookEvents(merchantIdentifier: query["merchant"].map(String.init), state: state, limit: limit)
            return EventList(events: events.map { EventView(event: $0, payload: String(decoding: $0.payload, as: UTF8.self)) })
        }
        admin.post("webhooks/{event}/replay") { _, context in
            let id = try context.parameters.require("event")
            guard try await store.replayWebhookEvent(id: id, at: time.now), let event = try await store.webhookEvent(id: id) else {
                throw OrchardError(.notFound, "there is no webhook event \(id)")
            }
            return EventView(event: event, payload: String(decoding: event.payload, as: UTF8.self))
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

extension WebhookEvent: ResponseEncodable {}
