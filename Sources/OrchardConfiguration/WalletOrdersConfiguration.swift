import ApplePay
import CertificateTools
import Crypto
import Foundation
import OrchardCore
import OrchardServices
import WalletOrders
import X509

extension ConfigurationFile {
    /// `merchants[].walletOrders` (WalletOrdersSection, shared with registered merchants' settings).
    public typealias WalletOrders = WalletOrdersSection
    /// `walletOrders.apns`.
    public typealias APNs = APNsSection
}

extension ServerConfiguration {
    /// `merchants[].walletOrders`: checked whole at startup, so a wrong certificate stops the
    /// server with its fix rather than failing the first shopper's Wallet.
    static func resolveWalletOrders(
        _ file: ConfigurationFile.WalletOrders?, merchantDisplayName: String, label: String, values: any ConfigurationReader,
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
            let dataURL = "data:image/png;base64,"
            let bytes =
                logo.hasPrefix(dataURL)
                ? Array(Data(base64Encoded: String(logo.dropFirst(dataURL.count))) ?? Data())
                : try values.read(logo, what: "\(section).logo")
            guard bytes.starts(with: [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]), bytes.count <= 1_000_000 else {
                throw ConfigurationError(
                    "\(logo.hasPrefix(dataURL) ? "the data URL" : values.describe(logo)): \(section).logo must be a PNG file of at most 1 MB"
                )
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
    static func resolveAPNsToken(_ apns: ConfigurationFile.APNs?, section: String, values: any ConfigurationReader)
        throws(ConfigurationError)
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
    static func resolveAPNs(_ apns: ConfigurationFile.APNs?, section: String, values: any ConfigurationReader) throws(ConfigurationError)
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
