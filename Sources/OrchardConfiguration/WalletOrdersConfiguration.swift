import ApplePay
import CertificateTools
import Crypto
import Foundation
import OrchardCore
import WalletOrders
import X509

extension ConfigurationFile {
    /// `merchants[].walletOrders`: the Order Type ID identity and what Wallet shows of the merchant.
    public struct WalletOrders: Codable, Sendable {
        /// The Order Type ID, e.g. `order.com.example.shop`: the certificate's subject UID.
        public var orderTypeIdentifier: String
        /// Certificate and key in one PKCS#12 file, instead of the pair below.
        public var identity: PKCS12File?
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
        public var apns: APNs?
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
    public struct APNs: Codable, Sendable {
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
}

extension ServerConfiguration {
    /// `merchants[].walletOrders`: checked whole at startup, so a wrong certificate stops the
    /// server with its fix rather than failing the first shopper's Wallet.
    static func resolveWalletOrders(
        _ file: ConfigurationFile.WalletOrders?, merchantDisplayName: String, label: String, values: ConfigurationValues,
        time: TimeSource
    ) throws(ConfigurationError) -> WalletOrdersSettings? {
        guard let file else { return nil }
        let section = "\(label).walletOrders"
        let identifier = file.orderTypeIdentifier
        guard !identifier.isEmpty, identifier.utf8.count <= 255, identifier.allSatisfy({ $0.isASCII && !$0.isWhitespace && $0 != "/" })
        else {
            throw ConfigurationError(
                "\(section).orderTypeIdentifier: \(identifier.debugDescription) is not an Order Type ID like order.com.example.shop")
        }
        for (key, url) in [("webServiceURL", file.webServiceURL), ("url", file.url), ("orderManagementURL", file.orderManagementURL)] {
            if let problem = WalletOrdersSettings.checkPublicURL(url.replacingOccurrences(of: "{orderNumber}", with: "x")) {
                throw ConfigurationError("\(section).\(key) \(problem)")
            }
        }
        try checkServicePath(file.webServiceURL, section: section)
        let files = IdentityFiles(
            pkcs12: file.identity, certificate: file.identityCertificate, key: file.identityKey, keyPassword: file.identityKeyPassword,
            section: "\(section).")
        let (certificates, key, certificateName, keyName) = try readIdentity(files, values: values)
        guard let leaf = certificates.first else { throw ConfigurationError("\(certificateName): no certificate") }
        try checkKeyType(key, certificate: leaf, keyName: keyName, certificateName: certificateName)
        var intermediates = Array(certificates.dropFirst())
        if let intermediate = file.intermediateCertificate {
            let bytes = try values.read(intermediate, what: "\(section).intermediateCertificate")
            intermediates += try reading(values.describe(intermediate)) { () throws(CertificateToolError) in
                try KeyReader.certificates(bytes)
            }
        }
        let identity: OrderTypeIdentity
        do {
            identity = try OrderTypeIdentity(
                orderTypeIdentifier: identifier, certificate: leaf, privateKey: try Certificate.PrivateKey(pemEncoded: key.pem),
                intermediates: intermediates, name: certificateName, at: time.now)
        } catch let error as WalletOrderError {
            throw ConfigurationError(error.message)
        } catch {
            throw ConfigurationError("\(certificateName): the key cannot sign (\(error))")
        }
        let logo = try file.logo.map { logo throws(ConfigurationError) in
            let bytes = try values.read(logo, what: "\(section).logo")
            guard bytes.starts(with: [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]), bytes.count <= 1_000_000 else {
                throw ConfigurationError("\(values.describe(logo)): \(section).logo must be a PNG file of at most 1 MB")
            }
            return bytes
        }
        return WalletOrdersSettings(
            identity: identity, identitySource: files.source(values), webServiceURL: file.webServiceURL.trimmingSuffix("/"),
            merchantDisplayName: file.displayName ?? merchantDisplayName, merchantURL: file.url, logoPNG: logo,
            orderManagementURL: file.orderManagementURL, apns: try resolveAPNs(file.apns, section: section, values: values),
            apnsToken: try resolveAPNsToken(file.apns, section: section, values: values), mandateCharges: file.mandateCharges ?? false)
    }

    /// Orchard serves Wallet's calls under `webServiceURL`'s path: one of its own, apart from
    /// Orchard's other routes, and plain enough to be a route (no `{`, `:` or `*`).
    static func checkServicePath(_ url: String, section: String) throws(ConfigurationError) {
        let path = (URLComponents(string: url)?.path ?? "").trimmingSuffix("/")
        let reserved = ["/v1", "/api", "/admin", "/apple-pay", "/.well-known", "/health", "/metrics", "/openapi"]
        let plain = path.utf8.allSatisfy { byte in
            (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
                || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || Array("/._~-".utf8).contains(byte)
        }
        guard !path.isEmpty, plain, !path.contains("//"), !reserved.contains(where: { path == $0 || path.hasPrefix($0 + "/") }) else {
            throw ConfigurationError(
                "\(section).webServiceURL must have a path of its own, like https://pay.shop.example/wallet-orders (letters, digits, '.', '_', '~', '-'; not under /v1, /api or /admin)"
            )
        }
    }

    /// `walletOrders.apns.tokenKey`, `keyId` and `teamId`: all three or none.
    static func resolveAPNsToken(_ apns: ConfigurationFile.APNs?, section: String, values: ConfigurationValues) throws(ConfigurationError)
        -> WalletOrdersSettings.APNsTokenKey?
    {
        guard let apns, apns.tokenKey != nil || apns.keyId != nil || apns.teamId != nil else { return nil }
        guard let reference = apns.tokenKey, let keyId = apns.keyId, let teamId = apns.teamId else {
            throw ConfigurationError("\(section).apns: tokenKey, keyId and teamId go together (or none, to push with the certificate)")
        }
        guard WalletOrdersSettings.APNsTokenKey.isIdentifier(keyId), WalletOrdersSettings.APNsTokenKey.isIdentifier(teamId) else {
            throw ConfigurationError(
                "\(section).apns: keyId and teamId are 10 upper-case letters and digits each, as the developer portal shows them")
        }
        let text = String(decoding: try values.read(reference, what: "\(section).apns.tokenKey"), as: UTF8.self)
        guard let key = try? P256.Signing.PrivateKey(pemRepresentation: text) else {
            throw ConfigurationError(
                "\(values.describe(reference)): \(section).apns.tokenKey must be the APNs key Apple gave as a .p8 file (EC P-256, PEM)")
        }
        return WalletOrdersSettings.APNsTokenKey(key: key, keyId: keyId, teamId: teamId)
    }

    /// `walletOrders.apns`: an https Apple push host (or an allowed test host) and its trust.
    static func resolveAPNs(_ apns: ConfigurationFile.APNs?, section: String, values: ConfigurationValues) throws(ConfigurationError)
        -> RemoteEndpoint
    {
        let baseURL = (apns?.baseURL ?? "https://\(WalletOrdersSettings.apnsHosts[0])").trimmingSuffix("/")
        guard let components = URLComponents(string: baseURL), components.scheme == "https", let host = components.host?.lowercased(),
            !host.isEmpty, components.user == nil, components.query == nil, components.path.isEmpty
        else {
            throw ConfigurationError("\(section).apns.baseURL: \(baseURL) must be https://host[:port], without path, credentials or query")
        }
        let isApple = WalletOrdersSettings.apnsHosts.contains(host) && [nil, 443, 2197].contains(components.port)
        if !isApple && apns?.allowNonAppleHost != true {
            throw ConfigurationError(
                "\(section).apns.baseURL: \(host) is not Apple's push service (api.push.apple.com); set apns.allowNonAppleHost to true to use a test service"
            )
        }
        var trust = RemoteEndpoint.Trust.system
        if let caFile = apns?.caFile {
            let bytes = try values.read(caFile, what: "\(section).apns.caFile")
            guard String(decoding: bytes, as: UTF8.self).contains("-----BEGIN CERTIFICATE-----") else {
                throw ConfigurationError("\(values.describe(caFile)): \(section).apns.caFile holds no PEM certificate")
            }
            trust = .caPEM(bytes)
        }
        return RemoteEndpoint(baseURL: baseURL, trust: trust, connectTimeout: .seconds(3), timeout: .seconds(10), isProductionHost: isApple)
    }
}
