import Crypto
import Foundation
import OrchardCore

/// What an operator sets for a registered merchant through the admin API: its processor (the
/// same keys as `merchants[].processor`, but each secret given as itself, not as `env:` or a
/// file) and its webhook endpoint. Stored sealed with `platformIntegrator.settingsKey`.
public struct MerchantSettingsFile: Codable, Sendable {
    /// The same shape as `merchants[].webhook`, but `secret` holds the secret itself.
    public typealias Webhook = MerchantWebhookSection

    public var processor: ProcessorSection?
    public var webhook: Webhook?
    /// The shop's quote URL and its signing secret, same shape as the webhook.
    public var quote: Webhook?
    /// The merchant's orders in the shopper's Wallet: certificate, key and intermediate as PEM
    /// text, the logo as `data:image/png;base64,…`.
    public var walletOrders: WalletOrdersSection?

    public init(processor: ProcessorSection? = nil, webhook: Webhook? = nil, quote: Webhook? = nil) {
        self.processor = processor
        self.webhook = webhook
        self.quote = quote
    }
}

/// Checks a registered merchant's settings as this server's configuration allows them, and
/// seals them with its settings key: what ``MerchantRegistryService`` asks of the server, and
/// what opens the settings the registry holds.
public struct RegisteredSettingsSealer: MerchantSettingsSealer {
    /// Checks settings as the configuration allows them; `stored` is true for settings saved
    /// earlier, being loaded (see ``ProcessorSection/Author``).
    public typealias Check =
        @Sendable (_ file: MerchantSettingsFile, _ partnerIdentifier: String, _ stored: Bool) throws(ConfigurationError) ->
        MerchantSettings

    let vault: SettingsVault
    let checking: Check

    public init(vault: SettingsVault, check: @escaping Check) {
        self.vault = vault
        checking = check
    }

    public func check(_ file: MerchantSettingsFile, partnerIdentifier: String) throws(ConfigurationError) -> MerchantSettings {
        try checking(file, partnerIdentifier, false)
    }

    public func seal(_ file: MerchantSettingsFile, partnerIdentifier: String) throws -> [UInt8] {
        try vault.seal(file, partnerIdentifier: partnerIdentifier)
    }

    /// One registered merchant's sealed settings, opened and checked.
    public func open(_ sealed: [UInt8], partnerIdentifier: String) throws(ConfigurationError) -> MerchantSettings {
        try checking(try vault.open(sealed, partnerIdentifier: partnerIdentifier), partnerIdentifier, true)
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

/// `merchants[].webhook` in the configuration file, and a registered merchant's `webhook` and `quote`
/// settings: where the merchant's events (or quote questions) go and the secret they are signed with.
public struct MerchantWebhookSection: Codable, Sendable {
    /// https, or http to localhost / 127.0.0.1 / ::1.
    public var url: String
    /// `env:NAME` or a file holding the signing secret (at least 32 characters, or `whsec_` and
    /// the base64 of at least 24 bytes), never the secret itself.
    public var secret: String
    /// During a rotation, the secret being replaced (same form): calls carry a Standard
    /// Webhooks signature with each secret until it is removed.
    public var previousSecret: String?

    public init(url: String, secret: String, previousSecret: String? = nil) {
        self.url = url
        self.secret = secret
        self.previousSecret = previousSecret
    }
}
