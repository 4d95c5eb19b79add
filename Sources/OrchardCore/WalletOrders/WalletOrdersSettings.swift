import Foundation
import WalletOrders

/// A merchant's Wallet orders, loaded and checked: who signs them, where Wallet reaches them and
/// what the shopper sees of the merchant.
public struct WalletOrdersSettings: Sendable {
    /// The Order Type ID certificate, key and intermediate; its identifier is the orders' type.
    public var identity: OrderTypeIdentity
    /// Where the certificate came from (a path or `env:NAME`), for messages.
    public var identitySource: String
    /// The public base of Orchard's order web service, without a trailing slash; Wallet appends `/v1/…`.
    public var webServiceURL: String
    public var merchantDisplayName: String
    /// The merchant's site, shown in Wallet.
    public var merchantURL: String
    /// The logo (PNG), packaged as `logo.png`; nil: none.
    public var logoPNG: [UInt8]?
    /// Where the shopper manages the order; `{orderNumber}` is replaced by the order's number.
    public var orderManagementURL: String
    /// Apple's push service (or a test one), reached with the Order Type ID identity.
    public var apns: RemoteEndpoint
    /// Whether a mandate's merchant-initiated charges get Wallet orders too (the shopper is not there to take them from a sheet).
    public var mandateCharges: Bool

    public var orderTypeIdentifier: String { identity.orderTypeIdentifier }

    public init(
        identity: OrderTypeIdentity, identitySource: String, webServiceURL: String, merchantDisplayName: String, merchantURL: String,
        logoPNG: [UInt8]?, orderManagementURL: String, apns: RemoteEndpoint, mandateCharges: Bool = false
    ) {
        self.identity = identity
        self.identitySource = identitySource
        self.webServiceURL = webServiceURL
        self.merchantDisplayName = merchantDisplayName
        self.merchantURL = merchantURL
        self.logoPNG = logoPNG
        self.orderManagementURL = orderManagementURL
        self.apns = apns
        self.mandateCharges = mandateCharges
    }

    /// Apple's push hosts: production, and development for apps built for it.
    public static let apnsHosts = ["api.push.apple.com", "api.sandbox.push.apple.com"]

    /// What is wrong with a URL Wallet or the shopper opens, or nil: https, or plain http on
    /// loopback only (tests and the demo; Wallet itself takes https alone).
    public static func checkPublicURL(_ url: String) -> String? {
        guard let components = URLComponents(string: url), let scheme = components.scheme?.lowercased(),
            let host = components.host?.lowercased(), !host.isEmpty, components.user == nil, components.password == nil,
            components.query == nil, components.fragment == nil
        else { return "must be an absolute URL without credentials, query or fragment, like https://pay.shop.example/wallet-orders" }
        let loopback = host == "localhost" || host == "127.0.0.1" || host == "::1"
        guard scheme == "https" || (scheme == "http" && loopback) else {
            return "must be https (Wallet takes nothing else; plain http only to localhost, 127.0.0.1 or ::1 for tests)"
        }
        return nil
    }
}
