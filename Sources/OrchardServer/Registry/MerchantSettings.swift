import Crypto
import Foundation
import OrchardCore

/// What an operator sets for a registered merchant through the admin API: its processor (the
/// same keys as `merchants[].processor`, but each secret given as itself, not as `env:` or a
/// file) and its webhook endpoint. Stored sealed with `platformIntegrator.settingsKey`.
public struct MerchantSettingsFile: Codable, Sendable {
    /// The same shape as `merchants[].webhook`, but `secret` holds the secret itself.
    public typealias Webhook = ConfigurationFile.MerchantWebhook

    public var processor: ProcessorSection?
    public var webhook: Webhook?
    /// The shop's quote URL and its signing secret, same shape as the webhook.
    public var quote: Webhook?

    public init(processor: ProcessorSection? = nil, webhook: Webhook? = nil, quote: Webhook? = nil) {
        self.processor = processor
        self.webhook = webhook
        self.quote = quote
    }
}

/// Checks a registered merchant's settings as this server's configuration allows them, and
/// seals them with its settings key: what ``MerchantRegistryService`` asks of the server.
struct RegisteredSettingsSealer: MerchantSettingsSealer {
    let configuration: ServerConfiguration
    let vault: SettingsVault

    /// Nil when no settings key is configured: settings are then never stored.
    init?(_ configuration: ServerConfiguration) {
        guard let vault = configuration.settingsVault else { return nil }
        self.configuration = configuration
        self.vault = vault
    }

    func check(_ file: MerchantSettingsFile, partnerIdentifier: String) throws(ConfigurationError) -> MerchantSettings {
        try configuration.resolveSettings(file, partnerIdentifier: partnerIdentifier)
    }

    func seal(_ file: MerchantSettingsFile, partnerIdentifier: String) throws -> [UInt8] {
        try vault.seal(file, partnerIdentifier: partnerIdentifier)
    }
}

/// Seals registered merchants' settings with AES-256-GCM under `platformIntegrator.settingsKey`,
/// bound to the merchant (its partner ID is the associated data), so a copy of the database
/// alone holds no processor credential and one merchant's settings cannot be moved to another.
public struct SettingsVault: Sendable {
    let key: SymmetricKey

    public init(key: SymmetricKey) {
        self.key = key
    }

    func seal(_ file: MerchantSettingsFile, partnerIdentifier: String) throws -> [UInt8] {
        let sealed = try AES.GCM.seal(try JSONEncoder().encode(file), using: key, authenticating: Array(partnerIdentifier.utf8))
        guard let combined = sealed.combined else { throw ConfigurationError("the settings could not be sealed") }
        return Array(combined)
    }

    func open(_ sealed: [UInt8], partnerIdentifier: String) throws(ConfigurationError) -> MerchantSettingsFile {
        do {
            let box = try AES.GCM.SealedBox(combined: sealed)
            return try JSONDecoder().decode(
                MerchantSettingsFile.self, from: try AES.GCM.open(box, using: key, authenticating: Array(partnerIdentifier.utf8)))
        } catch {
            throw ConfigurationError(
                "platformIntegrator.settingsKey does not open the stored settings of \(partnerIdentifier): it is not the key they were sealed with (restore the right key; the settings cannot be read without it)"
            )
        }
    }
}

/// Values given through the admin API: each is the value itself.
struct LiteralValues: ConfigurationReader {
    func read(_ reference: String, what: String) throws(ConfigurationError) -> [UInt8] { Array(reference.utf8) }
    func describe(_ reference: String) -> String { "(the value given)" }
}

extension ServerConfiguration {
    /// Checks settings the way the configuration file's merchants are checked, and then as a
    /// tenant's: the processor on its processor's own origin with the system's trust store (or a
    /// test origin this file lists), the webhook and quote URLs on public addresses.
    /// - Parameter stored: settings saved earlier, being loaded (see ``ProcessorSection/Author``).
    func resolveSettings(_ file: MerchantSettingsFile, partnerIdentifier: String, stored: Bool = false) throws(ConfigurationError)
        -> MerchantSettings
    {
        let label = "settings of \(partnerIdentifier)"
        var processor: any ProcessorSettings = RecordOnlySettings()
        if var section = file.processor {
            section.label = "\(label): processor"
            section.writtenBy = registeredProcessorAuthor(stored: stored)
            guard let driver = processorDrivers.first(where: { $0.type == section.type }) else {
                throw ConfigurationError("\(section.label).type must be one of \(processorDrivers.map(\.type).joined(separator: ", "))")
            }
            processor = try driver.settings(from: section, values: LiteralValues())
        }
        return MerchantSettings(
            processor: processor, webhook: try tenantEndpoint(file.webhook, label: "\(label): webhook"),
            quote: try tenantEndpoint(file.quote, label: "\(label): quote"))
    }

    /// A registered merchant's webhook or quote endpoint: checked as the file's are, its host
    /// then checked against ``OutboundSettings/tenants`` (the connect-time check follows on every call).
    func tenantEndpoint(_ file: MerchantSettingsFile.Webhook?, label: String) throws(ConfigurationError) -> WebhookEndpoint? {
        guard var endpoint = try Self.resolveWebhook(file, label: label, values: LiteralValues()) else { return nil }
        if let problem = outbound.tenants.refusal(forURL: endpoint.url) {
            throw ConfigurationError("\(label).url \(problem): a registered merchant's endpoints must be on the public internet")
        }
        endpoint.chosenBy = .tenant
        return endpoint
    }

    /// Every registered merchant's settings, opened and checked: the server does not start on a
    /// missing or wrong key, or settings that no longer check.
    public func loadRegisteredSettings(store: any MerchantRegistry) async throws(ConfigurationError) -> [String: MerchantSettings] {
        let sealed: [String: [UInt8]]
        do {
            sealed = try await store.sealedMerchantSettings()
        } catch {
            throw ConfigurationError("the registered merchants' settings could not be read (\(error))")
        }
        guard !sealed.isEmpty else { return [:] }
        guard settingsVault != nil else {
            throw ConfigurationError(
                "the registry holds sealed settings for \(sealed.count) registered merchant(s): set platformIntegrator.settingsKey to the key they were sealed with"
            )
        }
        var settings: [String: MerchantSettings] = [:]
        for (partner, bytes) in sealed {
            settings[partner] = try openSettings(bytes, partnerIdentifier: partner)
        }
        return settings
    }

    /// One registered merchant's sealed settings, opened and checked.
    func openSettings(_ sealed: [UInt8], partnerIdentifier: String) throws(ConfigurationError) -> MerchantSettings {
        guard let vault = settingsVault else {
            throw ConfigurationError("platformIntegrator.settingsKey is not set: \(partnerIdentifier)'s settings cannot be opened")
        }
        return try resolveSettings(
            try vault.open(sealed, partnerIdentifier: partnerIdentifier), partnerIdentifier: partnerIdentifier, stored: true)
    }
}
