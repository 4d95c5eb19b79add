import Foundation
import OrchardCore

// The `walletOrders` section, as the configuration file and the admin API (a registered
// merchant's settings) both take it. In the file each certificate, key and logo is a path or
// `env:NAME`; through the admin API each is the value itself (PEM text; the logo as
// `data:image/png;base64,…`).

/// `merchants[].walletOrders`: the Order Type ID identity and what Wallet shows of the merchant.
public struct WalletOrdersSection: Codable, Sendable {
    /// The Order Type ID, e.g. `order.com.example.shop`: the certificate's subject UID.
    public var orderTypeIdentifier: String
    /// Certificate and key in one PKCS#12 file, instead of the pair below.
    public var identity: PKCS12Section?
    public var identityCertificate: String?
    public var identityKey: String?
    public var identityKeyPassword: String?
    /// Apple's WWDR intermediate (G4) that issued the certificate, unless the PKCS#12 file or
    /// the certificate file holds it after the leaf.
    public var intermediateCertificate: String?
    /// The public base where Wallet reaches Orchard's order web service (`/v1/…` is appended).
    public var webServiceURL: String
    /// The merchant's name in Wallet (default: the merchant's `displayName`).
    public var displayName: String?
    /// The merchant's site.
    public var url: String
    /// The merchant's logo, a PNG file.
    public var logo: String?
    /// Where the shopper manages an order; `{orderNumber}` becomes the order's number.
    public var orderManagementURL: String
    /// Apple's push service: by default its production host.
    public var apns: APNsSection?
    /// Whether a mandate's merchant-initiated charges get Wallet orders too (default false).
    public var mandateCharges: Bool?

    public init(
        orderTypeIdentifier: String, identityCertificate: String?, identityKey: String?, intermediateCertificate: String?,
        webServiceURL: String, url: String, orderManagementURL: String
    ) {
        self.orderTypeIdentifier = orderTypeIdentifier
        self.identityCertificate = identityCertificate
        self.identityKey = identityKey
        self.intermediateCertificate = intermediateCertificate
        self.webServiceURL = webServiceURL
        self.url = url
        self.orderManagementURL = orderManagementURL
    }
}

/// `walletOrders.apns`: where pushes go, and whom to trust there.
public struct APNsSection: Codable, Sendable {
    public var baseURL: String?
    /// A PEM CA bundle to trust instead of the system store (a test service).
    public var caFile: String?
    /// Must be true for a `baseURL` whose host is not Apple's push service (a mock).
    public var allowNonAppleHost: Bool?
    /// A token-signing key (`.p8`, EC P-256): pushes authenticate with a JWT it signs instead of the certificate.
    public var tokenKey: String?
    /// The key's ID, 10 characters (with `tokenKey`).
    public var keyId: String?
    /// The developer team's ID, 10 characters (with `tokenKey`).
    public var teamId: String?

    public init(baseURL: String? = nil, caFile: String? = nil, allowNonAppleHost: Bool? = nil) {
        self.baseURL = baseURL
        self.caFile = caFile
        self.allowNonAppleHost = allowNonAppleHost
    }
}

/// A certificate and its key in one PKCS#12 (.p12) file, modern or legacy.
public struct PKCS12Section: Codable, Sendable {
    public var pkcs12: String
    /// `env:NAME` or a file holding the password, never the password itself.
    public var password: String?

    public init(pkcs12: String, password: String? = nil) {
        self.pkcs12 = pkcs12
        self.password = password
    }
}
