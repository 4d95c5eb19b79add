import Foundation
import OrchardCore
import OrchardServices

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
            quote: try tenantEndpoint(file.quote, label: "\(label): quote"),
            walletOrders: try tenantWalletOrders(file.walletOrders, label: label))
    }

    /// A registered merchant's Wallet orders: checked as the file's are, each value given as itself.
    /// Its PEM identity only (a PKCS#12 file is binary), its own display name, and Apple's push hosts only.
    func tenantWalletOrders(_ section: WalletOrdersSection?, label: String) throws(ConfigurationError) -> WalletOrdersSettings? {
        guard let section else { return nil }
        guard section.identity == nil else {
            throw ConfigurationError(
                "\(label): walletOrders.identity (PKCS#12) is not taken here: give identityCertificate and identityKey as PEM")
        }
        guard let displayName = section.displayName, !displayName.isEmpty else {
            throw ConfigurationError("\(label): walletOrders.displayName is required, the name Wallet shows")
        }
        // Served under the platform's one path: routes are set when the server starts, tenants come later.
        let path = (URLComponents(string: section.webServiceURL)?.path ?? "").trimmingSuffix("/")
        guard path == WalletOrdersSettings.registeredMerchantsPath else {
            throw ConfigurationError(
                "\(label): walletOrders.webServiceURL must end in \(WalletOrdersSettings.registeredMerchantsPath), where this server answers registered merchants' Wallet calls"
            )
        }
        guard section.apns?.allowNonAppleHost != true, section.apns?.caFile == nil else {
            throw ConfigurationError("\(label): walletOrders.apns may only name Apple's push service for a registered merchant")
        }
        return try Self.resolveWalletOrders(
            section, merchantDisplayName: displayName, label: "\(label):", values: LiteralValues(), time: time)
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
    public func openSettings(_ sealed: [UInt8], partnerIdentifier: String) throws(ConfigurationError) -> MerchantSettings {
        guard let sealer = settingsSealer else {
            throw ConfigurationError("platformIntegrator.settingsKey is not set: \(partnerIdentifier)'s settings cannot be opened")
        }
        return try sealer.open(sealed, partnerIdentifier: partnerIdentifier)
    }

    /// Checks and seals registered merchants' settings as this configuration allows them; nil
    /// when no settings key is configured (settings are then never stored).
    public var settingsSealer: RegisteredSettingsSealer? {
        settingsVault.map { vault in
            RegisteredSettingsSealer(vault: vault) { [self] file, partner, stored throws(ConfigurationError) in
                try resolveSettings(file, partnerIdentifier: partner, stored: stored)
            }
        }
    }
}
