import ApplePay
import Foundation
import WalletOrders

/// A merchant, loaded and checked: who it is to Apple, where it sells, what it sells and
/// where its payments go.
public struct MerchantConfiguration: Sendable {
    public var merchantIdentifier: String
    public var displayName: String
    /// Lowercased domains this merchant's pages are served from.
    public var domains: [String]
    public var identity: MerchantIdentity
    /// Where the identity certificate came from (a path or `env:NAME`), for messages.
    public var identitySource: String
    /// The domain association file's bytes, served unchanged.
    public var domainAssociation: [UInt8]?
    /// What the merchant sells; nil when orders are off.
    public var catalogue: Catalogue?
    /// The keys this merchant's tokens are encrypted to (handed to the payments engine).
    public var processingKeys: [ProcessingKey]
    /// Where authorized payments go.
    public var processor: any ProcessorSettings
    /// Where the merchant's webhooks go; nil: events are kept but not sent.
    public var webhook: WebhookEndpoint?
    /// The shop's quote URL, asked to price each change on the sheet of a payments-API request; nil: Orchard prices.
    public var quote: WebhookEndpoint?
    /// The merchant's orders in the shopper's Wallet; nil: off.
    public var walletOrders: WalletOrdersSettings?
    /// What Wallet shows the shopper of each merchant token's payments; nil: off.
    public var merchantTokenUsage: MerchantTokenUsageSettings?
    /// Google Pay beside Apple Pay; nil: off.
    public var googlePay: GooglePaySettings?

    public init(
        merchantIdentifier: String, displayName: String, domains: [String], identity: MerchantIdentity, identitySource: String,
        domainAssociation: [UInt8]? = nil, catalogue: Catalogue? = nil, processingKeys: [ProcessingKey] = [],
        processor: any ProcessorSettings = RecordOnlySettings(), webhook: WebhookEndpoint? = nil, quote: WebhookEndpoint? = nil,
        walletOrders: WalletOrdersSettings? = nil, merchantTokenUsage: MerchantTokenUsageSettings? = nil,
        googlePay: GooglePaySettings? = nil
    ) {
        self.googlePay = googlePay
        self.walletOrders = walletOrders
        self.merchantTokenUsage = merchantTokenUsage
        self.quote = quote
        self.webhook = webhook
        self.merchantIdentifier = merchantIdentifier
        self.displayName = displayName
        self.domains = domains
        self.identity = identity
        self.identitySource = identitySource
        self.domainAssociation = domainAssociation
        self.catalogue = catalogue
        self.processingKeys = processingKeys
        self.processor = processor
    }
}
