import ApplePay
import Foundation

/// A registered merchant's settings, checked: its processor, and its webhook and quote endpoints.
public struct MerchantSettings: Sendable {
    public var processor: any ProcessorSettings
    public var webhook: WebhookEndpoint?
    public var quote: WebhookEndpoint?
    /// The merchant's orders in the shopper's Wallet; nil: off.
    public var walletOrders: WalletOrdersSettings?

    public init(
        processor: any ProcessorSettings, webhook: WebhookEndpoint?, quote: WebhookEndpoint?, walletOrders: WalletOrdersSettings? = nil
    ) {
        self.walletOrders = walletOrders
        self.processor = processor
        self.webhook = webhook
        self.quote = quote
    }
}

/// What the merchant registry needs from the server's live view of its merchants: which
/// identifiers and domains are already taken (by the configuration or another registration),
/// and the copy of the registry every request is served from, kept in step with each change.
public protocol RegistryDirectory: Sendable {
    /// The platform integrator's merchant ID, to which registered merchants' tokens are
    /// encrypted; nil when no platform integrator is configured.
    var platformIdentifier: String? { get }
    /// Registered merchants, by partner identifier.
    var registrations: [RegisteredMerchant] { get }
    /// Registered merchants' settings, by partner identifier.
    var settings: [String: MerchantSettings] { get }
    /// Why `identifier` cannot be a registered merchant's here (a configured merchant's, the
    /// platform's own), or nil.
    func reservation(of identifier: String) -> String?
    /// Who holds `domain` (a configured merchant ID or a registered partner ID), if anyone.
    func owner(of domain: String) -> String?
    /// Swaps in the registry's contents after a change.
    func replaceRegistrations(_ merchants: [RegisteredMerchant])
    /// Puts a registered merchant's checked settings to use.
    func setSettings(_ settings: MerchantSettings, forPartner partnerIdentifier: String)
    /// The merchant whose Wallet orders are of `orderTypeIdentifier` (configured or registered), or nil.
    func walletOrderTypeOwner(_ orderTypeIdentifier: String) -> String?
}

/// Checks and seals a registered merchant's settings as the admin API sends them. The server
/// knows what may be set (the processor types it runs, the test processors it lists, the public
/// addresses tenants' endpoints must be on) and holds the key; the registry decides when.
public protocol MerchantSettingsSealer: Sendable {
    /// The settings as the admin API sends them, secrets as themselves.
    associatedtype File: Sendable
    /// `file` checked as `partnerIdentifier`'s settings; the message says what to change.
    func check(_ file: File, partnerIdentifier: String) throws(ConfigurationError) -> MerchantSettings
    /// `file` sealed to the merchant: it opens only with the same key, for the same partner ID.
    func seal(_ file: File, partnerIdentifier: String) throws -> [UInt8]
}

/// Sends a merchant's undelivered webhook events now (a retiring merchant's last ones).
public protocol PendingDeliveries: Sendable {
    /// Tries each of `merchant`'s pending events once; returns how many were tried.
    func deliverPending(merchant: String) async -> Int
}

/// Apple refused a registration call, or did not answer it: nothing was recorded here. The
/// server maps it (with Apple's status, for the operator) where it maps every refusal.
public struct RegistrationCallError: Error, Sendable, Equatable {
    public var gateway: GatewayError

    public init(_ gateway: GatewayError) { self.gateway = gateway }
}
