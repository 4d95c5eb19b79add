import Crypto
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
    /// A token-signing key (`.p8`): pushes carry a JWT it signs instead of the TLS client certificate.
    public var apnsToken: APNsTokenKey?
    /// Whether a mandate's merchant-initiated charges get Wallet orders too (the shopper is not there to take them from a sheet).
    public var mandateCharges: Bool

    public var orderTypeIdentifier: String { identity.orderTypeIdentifier }

    public init(
        identity: OrderTypeIdentity, identitySource: String, webServiceURL: String, merchantDisplayName: String, merchantURL: String,
        logoPNG: [UInt8]?, orderManagementURL: String, apns: RemoteEndpoint, apnsToken: APNsTokenKey? = nil, mandateCharges: Bool = false
    ) {
        self.apnsToken = apnsToken
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

    /// APNs's token-based authentication: the team's key, its ID and the team ID, as Apple's
    /// developer portal names them ("Establishing a token-based connection to APNs").
    public struct APNsTokenKey: Sendable {
        public var key: P256.Signing.PrivateKey
        /// The key's 10-character identifier (the JWT's `kid`).
        public var keyId: String
        /// The developer team's 10-character identifier (the JWT's `iss`).
        public var teamId: String

        public init(key: P256.Signing.PrivateKey, keyId: String, teamId: String) {
            self.key = key
            self.keyId = keyId
            self.teamId = teamId
        }

        /// The provider token APNs takes as `authorization: bearer …`: an ES256 JWT issued at `issuedAt`.
        public func token(issuedAt: Date) throws -> String {
            let header = Self.base64URL(Array(#"{"alg":"ES256","kid":"\#(keyId)"}"#.utf8))
            let claims = Self.base64URL(Array(#"{"iss":"\#(teamId)","iat":\#(Int64(issuedAt.timeIntervalSince1970))}"#.utf8))
            let signed = "\(header).\(claims)"
            let signature = try key.signature(for: Array(signed.utf8))
            return "\(signed).\(Self.base64URL(Array(signature.rawRepresentation)))"
        }

        public static func base64URL(_ bytes: [UInt8]) -> String {
            Data(bytes).base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
                .replacingOccurrences(of: "=", with: "")
        }

        /// Whether `text` is a 10-character key or team ID: Apple's are upper-case letters and digits.
        public static func isIdentifier(_ text: String) -> Bool {
            text.utf8.count == 10 && text.utf8.allSatisfy { (48...57).contains($0) || (65...90).contains($0) }
        }
    }

    /// Where registered merchants' Wallet calls are answered: one path, routed whenever a platform integrator is configured.
    public static let registeredMerchantsPath = "/wallet-orders"

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
