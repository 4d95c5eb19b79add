import ApplePay
import Crypto
import CurlClient
import Foundation
import Logging
import SwiftASN1
import X509

/// The configuration file's shape (JSON). See the README for every key.
public struct ConfigurationFile: Codable, Sendable {
    public struct Server: Codable, Sendable {
        public var host: String?
        public var port: Int?
        /// The folder of static files (the checkout page); relative to the config file.
        public var publicDirectory: String?
        /// Largest request body accepted by the API, in bytes.
        public var maxBodyBytes: Int?

        public init(host: String? = nil, port: Int? = nil, publicDirectory: String? = nil, maxBodyBytes: Int? = nil) {
            self.host = host
            self.port = port
            self.publicDirectory = publicDirectory
            self.maxBodyBytes = maxBodyBytes
        }
    }

    public struct AppleGateway: Codable, Sendable {
        public var baseURL: String?
        /// A PEM CA bundle to trust for the gateway instead of the system store.
        public var caFile: String?
        /// Must be true for a `baseURL` whose host is not Apple's (a mock gateway).
        public var allowNonAppleHost: Bool?
        public var connectTimeoutMilliseconds: Int?
        public var timeoutMilliseconds: Int?

        public init(
            baseURL: String? = nil, caFile: String? = nil, allowNonAppleHost: Bool? = nil,
            connectTimeoutMilliseconds: Int? = nil, timeoutMilliseconds: Int? = nil
        ) {
            self.baseURL = baseURL
            self.caFile = caFile
            self.allowNonAppleHost = allowNonAppleHost
            self.connectTimeoutMilliseconds = connectTimeoutMilliseconds
            self.timeoutMilliseconds = timeoutMilliseconds
        }
    }

    public struct Merchant: Codable, Sendable {
        public var merchantIdentifier: String
        public var displayName: String
        public var domains: [String]
        /// PEM file (leaf first); or `env:NAME` for PEM text in an environment variable.
        public var identityCertificate: String
        /// PEM file (unencrypted); or `env:NAME` for PEM text in an environment variable.
        public var identityKey: String
        public var domainAssociationFile: String?
        /// The catalogue (JSON) this merchant sells from; orders are off without one.
        public var catalogue: String?
        /// Payment processing keys; the token's publicKeyHash picks one (rotation).
        public var processingKeys: [ProcessingKeyFile]?
        /// Where authorized payments go (record only when absent).
        public var processor: Processor?

        public init(
            merchantIdentifier: String, displayName: String, domains: [String], identityCertificate: String,
            identityKey: String, domainAssociationFile: String? = nil, catalogue: String? = nil,
            processingKeys: [ProcessingKeyFile]? = nil, processor: Processor? = nil
        ) {
            self.processor = processor
            self.catalogue = catalogue
            self.processingKeys = processingKeys
            self.merchantIdentifier = merchantIdentifier
            self.displayName = displayName
            self.domains = domains
            self.identityCertificate = identityCertificate
            self.identityKey = identityKey
            self.domainAssociationFile = domainAssociationFile
        }
    }

    /// A processing key: PEM private key (or `env:NAME`) and its processing certificate,
    /// or, without a certificate, the merchant identifier is used for the KDF.
    public struct ProcessingKeyFile: Codable, Sendable {
        public var privateKey: String
        public var certificate: String?

        public init(privateKey: String, certificate: String? = nil) {
            self.privateKey = privateKey
            self.certificate = certificate
        }
    }

    /// The checkout page's settings.
    public struct Checkout: Codable, Sendable {
        /// Apple's Apple Pay JS SDK, which adds `<apple-pay-button>`. Absent: Apple's CDN;
        /// `"none"`: not loaded (the page draws its own button). Its origin joins the CSP.
        public var applePaySDK: String?

        public init(applePaySDK: String? = nil) {
            self.applePaySDK = applePaySDK
        }
    }

    /// A payment platform integrator's own identity, for the Web Merchant Registration API
    /// and for the sessions of the merchants it registers.
    public struct PlatformIntegrator: Codable, Sendable {
        /// The platform's merchant ID: its certificates carry it, and registered merchants' tokens are encrypted to it.
        public var merchantIdentifier: String
        public var identityCertificate: String
        public var identityKey: String
        /// Apple's association file for the platform, served on every registered domain.
        public var domainAssociationFile: String?
        /// Decrypt the tokens of registered merchants (they encrypt to the platform).
        public var processingKeys: [ProcessingKeyFile]?

        public init(
            merchantIdentifier: String, identityCertificate: String, identityKey: String, domainAssociationFile: String? = nil,
            processingKeys: [ProcessingKeyFile]? = nil
        ) {
            self.merchantIdentifier = merchantIdentifier
            self.identityCertificate = identityCertificate
            self.identityKey = identityKey
            self.domainAssociationFile = domainAssociationFile
            self.processingKeys = processingKeys
        }
    }

    /// The admin API (`/admin/`), off unless a token is set.
    public struct Admin: Codable, Sendable {
        /// `env:NAME` or a file holding the bearer token (never the token itself): at least 32 characters.
        public var token: String?

        public init(token: String? = nil) {
            self.token = token
        }
    }

    public var server: Server?
    public var appleGateway: AppleGateway?
    public var platformIntegrator: PlatformIntegrator?
    public var admin: Admin?
    public var payments: Payments?
    public var checkout: Checkout?
    /// Where the SQLite database lives; relative to the config file. Default `state`.
    public var stateDirectory: String?
    public var merchants: [Merchant]

    public init(
        server: Server? = nil, appleGateway: AppleGateway? = nil, payments: Payments? = nil, checkout: Checkout? = nil,
        stateDirectory: String? = nil, platformIntegrator: PlatformIntegrator? = nil, admin: Admin? = nil, merchants: [Merchant]
    ) {
        self.checkout = checkout
        self.platformIntegrator = platformIntegrator
        self.admin = admin
        self.server = server
        self.appleGateway = appleGateway
        self.payments = payments
        self.stateDirectory = stateDirectory
        self.merchants = merchants
    }
}

/// A merchant, loaded and checked.
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
    public var processor: ProcessorSettings = .record

    /// The TLS identity presented to Apple.
    public var tlsIdentity: TLSIdentity {
        .pem(certificate: identity.certificatePEM, key: identity.keyPEM)
    }
}

/// Everything the server needs, loaded and checked at startup.
public struct ServerConfiguration: Sendable {
    public var host: String
    public var port: Int
    public var publicDirectory: String?
    public var maxBodyBytes: Int
    public var gatewayBaseURL: String
    public var gatewayTrust: TLSTrust
    public var gatewayTimeouts: CurlTimeouts
    /// True when the gateway is not one of Apple's hosts (a mock); logged as a warning.
    public var gatewayIsNonApple: Bool
    public var merchants: [MerchantConfiguration]
    /// The root payment tokens chain to (Apple's unless a test root is configured), and their age window.
    public var tokenRoot: Certificate
    public var tokenPolicy: TokenVerifier.Policy
    /// How unknown payments are re-sent in the background.
    public var reconciliation: ReconciliationSettings
    /// The payment vault when `payments.vaultKey` is configured; nil: the key file in the state folder.
    public var vault: PaymentVault?
    /// True when a test token root replaces Apple's; logged as a warning.
    public var trustsTestTokenRoot: Bool
    /// The folder holding the SQLite database.
    public var stateDirectory: String
    /// Where the page loads Apple's JS SDK from; nil: not loaded.
    public var applePaySDK: URL?
    /// The platform integrator, as a merchant without domains: the template for registered merchants.
    public var platform: MerchantConfiguration?
    /// The admin API's bearer token; nil turns the admin API off.
    public var adminToken: AdminToken?

    /// Every certificate Orchard holds, for `/health` and expiry warnings.
    public var certificates: [ConfiguredCertificate] {
        var list: [ConfiguredCertificate] = []
        for merchant in merchants + (platform.map { [$0] } ?? []) {
            let owner = merchant.domains.isEmpty ? "platform \(merchant.merchantIdentifier)" : merchant.merchantIdentifier
            list.append(
                ConfiguredCertificate(
                    owner: owner, kind: "identity", source: merchant.identitySource, certificate: merchant.identity.certificate))
            for key in merchant.processingKeys {
                if let certificate = key.certificate {
                    list.append(ConfiguredCertificate(owner: owner, kind: "processing", source: nil, certificate: certificate))
                }
            }
        }
        return list
    }

    /// The merchant serving a Host header value (port ignored, case-insensitive), if any.
    public func merchant(forHost host: String?) -> (merchant: MerchantConfiguration, domain: String)? {
        guard let domain = host.flatMap(Self.domain(fromHost:)) else { return nil }
        guard let merchant = merchants.first(where: { $0.domains.contains(domain) }) else { return nil }
        return (merchant, domain)
    }

    /// `Shop.Example:8443` → `shop.example`; `[::1]:80` → `::1`.
    static func domain(fromHost host: String) -> String? {
        var name = Substring(host)
        if name.hasPrefix("[") {
            guard let close = name.firstIndex(of: "]") else { return nil }
            name = name[name.index(after: name.startIndex)..<close]
        } else if let colon = name.lastIndex(of: ":") {
            guard name[name.index(after: colon)...].allSatisfy(\.isNumber) else { return nil }
            name = name[..<colon]
        }
        guard !name.isEmpty, name.utf8.count <= 253 else { return nil }
        return name.lowercased()
    }
}

/// The admin API's bearer token. Compared in constant time; never printed.
public struct AdminToken: Sendable, CustomStringConvertible {
    public static let minimumLength = 32
    let digest: [UInt8]

    public init(_ token: String) { digest = Array(SHA256.hash(data: Array(token.utf8))) }

    /// Compares SHA-256 digests byte by byte without an early exit, so neither the length
    /// nor the first differing byte of the presented token shows in the timing.
    public func matches(_ presented: [UInt8]) -> Bool {
        let other = Array(SHA256.hash(data: presented))
        var difference: UInt8 = 0
        for index in 0..<digest.count { difference |= other[index] ^ digest[index] }
        return difference == 0
    }

    public var description: String { "AdminToken(redacted)" }
}

/// A certificate Orchard holds: whose it is and what it does.
public struct ConfiguredCertificate: Sendable {
    /// A merchant ID, or "platform <ID>".
    public var owner: String
    /// "identity" or "processing".
    public var kind: String
    /// Where it was loaded from, when known.
    public var source: String?
    public var certificate: Certificate

    public init(owner: String, kind: String, source: String?, certificate: Certificate) {
        self.owner = owner
        self.kind = kind
        self.source = source
        self.certificate = certificate
    }

    /// Whole days until it expires, counted from `now` (negative once expired).
    public func daysLeft(at now: Date) -> Int {
        Int((certificate.notValidAfter.timeIntervalSince(now) / 86_400).rounded(.down))
    }
}

/// A startup problem: one line naming the file or key and what is wrong.
public struct ConfigurationError: Error, Sendable, CustomStringConvertible {
    public var message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}

extension ServerConfiguration {
    /// Loads a JSON configuration file, resolves relative paths against its folder, reads
    /// every certificate, key and association file, and checks them at `time.now`.
    public static func load(
        path: String,
        environment: [String: String] = ProcessInfo.processInfo.environment,
        time: TimeSource = .system
    ) throws(ConfigurationError) -> ServerConfiguration {
        let data: Data
        do {
            data = try Data(contentsOf: URL(fileURLWithPath: path))
        } catch {
            throw ConfigurationError("\(path): cannot read the configuration file (\(Self.reason(error)))")
        }
        let file: ConfigurationFile
        do {
            file = try JSONDecoder().decode(ConfigurationFile.self, from: data)
        } catch {
            throw ConfigurationError("\(path): invalid configuration: \(Self.describe(error))")
        }
        let folder = URL(fileURLWithPath: path).deletingLastPathComponent().path
        return try resolve(file, relativeTo: folder, environment: environment, time: time)
    }

    /// Resolves an already-decoded configuration (paths relative to `folder`).
    public static func resolve(
        _ file: ConfigurationFile, relativeTo folder: String,
        environment: [String: String] = ProcessInfo.processInfo.environment,
        time: TimeSource = .system
    ) throws(ConfigurationError) -> ServerConfiguration {
        let source = Sources(folder: folder, environment: environment)
        let gateway = file.appleGateway
        let baseURL = (gateway?.baseURL ?? "https://\(GatewayHosts.production)").trimmingSuffix("/")
        guard let components = URLComponents(string: baseURL), components.scheme == "https",
            let gatewayHost = components.host, !gatewayHost.isEmpty, components.user == nil, components.query == nil
        else {
            throw ConfigurationError("appleGateway.baseURL: \(baseURL) must be an https URL without credentials or query")
        }
        let isApple = GatewayHosts.isAppleHost(gatewayHost) && (components.port ?? 443) == 443
        if !isApple && gateway?.allowNonAppleHost != true {
            throw ConfigurationError(
                "appleGateway.baseURL: \(gatewayHost) is not an Apple Pay gateway host; set appleGateway.allowNonAppleHost to true to use a test gateway"
            )
        }
        var trust = TLSTrust.system
        if let caFile = gateway?.caFile {
            let bytes = try source.read(caFile, what: "appleGateway.caFile")
            guard String(decoding: bytes, as: UTF8.self).contains("-----BEGIN CERTIFICATE-----") else {
                throw ConfigurationError("\(source.describe(caFile)): appleGateway.caFile holds no PEM certificate")
            }
            trust = .caPEM(bytes)
        }
        let timeouts = CurlTimeouts(
            connect: .milliseconds(gateway?.connectTimeoutMilliseconds ?? 3000),
            total: .milliseconds(gateway?.timeoutMilliseconds ?? 10_000))
        guard timeouts.connect > .zero, timeouts.connect <= timeouts.total, timeouts.total <= CurlTimeouts.maximumTotal else {
            throw ConfigurationError(
                "appleGateway: timeouts must be positive, connect ≤ total, and total ≤ \(CurlTimeouts.maximumTotal) (Safari gives up at 30 s)"
            )
        }

        guard !file.merchants.isEmpty else { throw ConfigurationError("merchants: at least one merchant is required") }
        var seenDomains: [String: String] = [:]
        var merchants: [MerchantConfiguration] = []
        for (index, merchant) in file.merchants.enumerated() {
            let label = "merchants[\(index)] (\(merchant.merchantIdentifier))"
            do {
                _ = try MerchantSessionRequest(
                    merchantIdentifier: merchant.merchantIdentifier, displayName: merchant.displayName, domain: "x")
            } catch {
                throw ConfigurationError("\(label): \(error.message)")
            }
            guard !merchant.domains.isEmpty else { throw ConfigurationError("\(label): domains must not be empty") }
            var domains: [String] = []
            for domain in merchant.domains {
                let lowered = domain.lowercased()
                guard DomainName.isValid(lowered) else {
                    throw ConfigurationError("\(label): \(domain) is not a valid domain name")
                }
                if let other = seenDomains[lowered] {
                    throw ConfigurationError("\(label): domain \(lowered) is already configured for \(other)")
                }
                seenDomains[lowered] = merchant.merchantIdentifier
                domains.append(lowered)
            }
            let certificate = try source.read(merchant.identityCertificate, what: "identityCertificate")
            let key = try source.read(merchant.identityKey, what: "identityKey")
            let identity: MerchantIdentity
            do {
                identity = try MerchantIdentity(
                    certificatePEM: certificate, keyPEM: key,
                    certificateName: source.describe(merchant.identityCertificate),
                    keyName: source.describe(merchant.identityKey),
                    at: time.now)
            } catch {
                throw ConfigurationError(error.message)
            }
            let association = try merchant.domainAssociationFile.map { file throws(ConfigurationError) in
                try source.read(file, what: "domainAssociationFile")
            }
            var catalogue: Catalogue?
            if let file = merchant.catalogue {
                let bytes = try source.read(file, what: "catalogue")
                do {
                    let decoder = JSONDecoder()
                    decoder.dateDecodingStrategy = .iso8601
                    catalogue = try decoder.decode(Catalogue.self, from: Data(bytes)).validated()
                } catch let error as ApplePayError {
                    throw ConfigurationError("\(source.describe(file)): \(error.message)")
                } catch {
                    throw ConfigurationError("\(source.describe(file)): invalid catalogue: \(Self.describe(error))")
                }
            }
            let keys = try loadProcessingKeys(
                merchant.processingKeys ?? [], merchantIdentifier: merchant.merchantIdentifier, source: source, time: time)
            let processor = try loadProcessor(merchant.processor, label: label, source: source)
            if catalogue != nil && keys.isEmpty {
                throw ConfigurationError("\(label): a merchant with a catalogue needs processingKeys to decrypt payments")
            }
            merchants.append(
                MerchantConfiguration(
                    merchantIdentifier: merchant.merchantIdentifier, displayName: merchant.displayName,
                    domains: domains, identity: identity, identitySource: source.describe(merchant.identityCertificate),
                    domainAssociation: association, catalogue: catalogue, processingKeys: keys, processor: processor))
        }
        var platform: MerchantConfiguration?
        if let integrator = file.platformIntegrator {
            platform = try loadPlatform(integrator, source: source, time: time)
        }
        var adminToken: AdminToken?
        if let value = file.admin?.token {
            let text = String(decoding: try source.read(value, what: "admin.token"), as: UTF8.self)
                .trimmingCharacters(in: .whitespacesAndNewlines)
            guard text.utf8.count >= AdminToken.minimumLength else {
                throw ConfigurationError(
                    "\(source.describe(value)): admin.token must be at least \(AdminToken.minimumLength) characters (try `openssl rand -hex 32`)"
                )
            }
            adminToken = AdminToken(text)
        }
        let maxBody = file.server?.maxBodyBytes ?? 16 * 1024
        guard (1024...(1 << 20)).contains(maxBody) else {
            throw ConfigurationError("server.maxBodyBytes must be between 1024 and 1048576")
        }
        let port = file.server?.port ?? 8080
        guard (0...65535).contains(port) else { throw ConfigurationError("server.port \(port) is out of range") }
        let payments = file.payments
        let policy = TokenVerifier.Policy(
            maximumAge: TimeInterval(payments?.tokenMaximumAgeSeconds ?? 300),
            maximumFutureSkew: TimeInterval(payments?.tokenMaximumFutureSkewSeconds ?? 60))
        guard policy.maximumAge > 0, policy.maximumAge <= 3600, policy.maximumFutureSkew >= 0, policy.maximumFutureSkew <= 600 else {
            throw ConfigurationError("payments: tokenMaximumAgeSeconds must be 1–3600 and tokenMaximumFutureSkewSeconds 0–600")
        }
        var tokenRoot = AppleRootCA.g3
        if let rootFile = payments?.testTokenRootCertificate {
            let text = String(decoding: try source.read(rootFile, what: "payments.testTokenRootCertificate"), as: UTF8.self)
            guard let root = try? Certificate(pemEncoded: text) else {
                throw ConfigurationError("\(source.describe(rootFile)): payments.testTokenRootCertificate is not a PEM certificate")
            }
            tokenRoot = root
        }
        return ServerConfiguration(
            host: file.server?.host ?? "127.0.0.1",
            port: port,
            publicDirectory: file.server?.publicDirectory.map(source.path),
            maxBodyBytes: maxBody,
            gatewayBaseURL: baseURL,
            gatewayTrust: trust,
            gatewayTimeouts: timeouts,
            gatewayIsNonApple: !isApple,
            merchants: merchants,
            tokenRoot: tokenRoot,
            tokenPolicy: policy,
            reconciliation: try ReconciliationSettings(payments),
            vault: try payments?.vaultKey.map { value throws(ConfigurationError) in
                try PaymentVault.parseKey(source.read(value, what: "payments.vaultKey"), name: source.describe(value))
            },
            trustsTestTokenRoot: payments?.testTokenRootCertificate != nil,
            stateDirectory: source.path(file.stateDirectory ?? "state"),
            applePaySDK: try Self.applePaySDK(file.checkout?.applePaySDK),
            platform: platform,
            adminToken: adminToken)
    }

    static func loadProcessingKeys(
        _ files: [ConfigurationFile.ProcessingKeyFile], merchantIdentifier: String, source: Sources, time: TimeSource
    ) throws(ConfigurationError) -> [ProcessingKey] {
        var keys: [ProcessingKey] = []
        for (index, key) in files.enumerated() {
            let pem = String(decoding: try source.read(key.privateKey, what: "processingKeys[\(index)].privateKey"), as: UTF8.self)
            let certificatePEM = try key.certificate.map { file throws(ConfigurationError) in
                String(decoding: try source.read(file, what: "processingKeys[\(index)].certificate"), as: UTF8.self)
            }
            let loaded: ProcessingKey
            do {
                loaded =
                    try certificatePEM.map { try ProcessingKey(privateKeyPEM: pem, certificatePEM: $0) }
                    ?? ProcessingKey(privateKeyPEM: pem, merchantIdentifier: merchantIdentifier)
            } catch let error as ApplePayError {
                throw ConfigurationError("\(source.describe(key.privateKey)): \(error.message)")
            } catch {
                throw ConfigurationError("\(source.describe(key.privateKey)): \(error)")
            }
            if let certificate = loaded.certificate, let file = key.certificate, certificate.notValidAfter < time.now {
                throw ConfigurationError(
                    "\(source.describe(file)): the processing certificate expired on \(certificate.notValidAfter.formatted(.iso8601)); create a new one in the Apple Developer portal"
                )
            }
            keys.append(loaded)
        }
        return keys
    }

    static func loadPlatform(
        _ integrator: ConfigurationFile.PlatformIntegrator, source: Sources, time: TimeSource
    ) throws(ConfigurationError) -> MerchantConfiguration {
        let certificate = try source.read(integrator.identityCertificate, what: "platformIntegrator.identityCertificate")
        let key = try source.read(integrator.identityKey, what: "platformIntegrator.identityKey")
        let identity: MerchantIdentity
        do {
            identity = try MerchantIdentity(
                certificatePEM: certificate, keyPEM: key, certificateName: source.describe(integrator.identityCertificate),
                keyName: source.describe(integrator.identityKey), at: time.now)
        } catch {
            throw ConfigurationError(error.message)
        }
        guard MerchantRegistrationRules.isValidPartnerIdentifier(integrator.merchantIdentifier) else {
            throw ConfigurationError(
                "platformIntegrator.merchantIdentifier \(integrator.merchantIdentifier.debugDescription) is not a merchant ID")
        }
        let association = try integrator.domainAssociationFile.map { file throws(ConfigurationError) in
            try source.read(file, what: "platformIntegrator.domainAssociationFile")
        }
        let keys = try loadProcessingKeys(
            integrator.processingKeys ?? [], merchantIdentifier: integrator.merchantIdentifier, source: source, time: time)
        return MerchantConfiguration(
            merchantIdentifier: integrator.merchantIdentifier, displayName: integrator.merchantIdentifier, domains: [],
            identity: identity, identitySource: source.describe(integrator.identityCertificate), domainAssociation: association,
            catalogue: nil, processingKeys: keys)
    }

    /// Apple's SDK, the one the docs name.
    public static let appleApplePaySDK = URL(string: "https://applepay.cdn-apple.com/jsapi/1.latest/apple-pay-sdk.js")!

    /// `checkout.applePaySDK`: https anywhere, or plain http on loopback only (a local copy for tests).
    static func applePaySDK(_ value: String?) throws(ConfigurationError) -> URL? {
        guard let value else { return appleApplePaySDK }
        if value == "none" { return nil }
        guard let url = URL(string: value), let scheme = url.scheme?.lowercased(), let host = url.host, url.user == nil,
            scheme == "https" || (scheme == "http" && ["127.0.0.1", "localhost", "::1"].contains(host.lowercased()))
        else {
            throw ConfigurationError(
                "checkout.applePaySDK must be an https URL (or http on loopback), or \"none\"; got \(value)")
        }
        return url
    }

    static func reason(_ error: any Error) -> String {
        let nsError = error as NSError
        if let underlying = nsError.userInfo[NSUnderlyingErrorKey] as? NSError, underlying.domain == NSPOSIXErrorDomain,
            let code = POSIXErrorCode(rawValue: Int32(underlying.code))
        {
            return String(cString: strerror(code.rawValue))
        }
        switch nsError.code {
        case NSFileReadNoSuchFileError, NSFileNoSuchFileError: return "no such file"
        case NSFileReadNoPermissionError: return "permission denied"
        default: return nsError.localizedDescription
        }
    }

    static func describe(_ error: any Error) -> String {
        switch error {
        case DecodingError.keyNotFound(let key, let context):
            return "missing key \(Self.path(context.codingPath + [key]))"
        case DecodingError.typeMismatch(let type, let context):
            return "\(Self.path(context.codingPath)) should be \(type)"
        case DecodingError.valueNotFound(let type, let context):
            return "\(Self.path(context.codingPath)) should be \(type), not null"
        case DecodingError.dataCorrupted(let context):
            return context.codingPath.isEmpty ? "not valid JSON" : "\(Self.path(context.codingPath)): \(context.debugDescription)"
        default:
            return "\(error)"
        }
    }

    private static func path(_ keys: [any CodingKey]) -> String {
        keys.map { $0.intValue.map { "[\($0)]" } ?? ".\($0.stringValue)" }.joined().trimmingPrefix(".").description
    }
}

/// Reads configured files, or `env:NAME` values from the environment.
struct Sources {
    var folder: String
    var environment: [String: String]

    func path(_ value: String) -> String {
        value.hasPrefix("/") ? value : URL(fileURLWithPath: folder).appendingPathComponent(value).standardizedFileURL.path
    }

    func describe(_ value: String) -> String {
        value.hasPrefix("env:") ? value : path(value)
    }

    func read(_ value: String, what: String) throws(ConfigurationError) -> [UInt8] {
        if value.hasPrefix("env:") {
            let name = String(value.dropFirst(4))
            guard let text = environment[name], !text.isEmpty else {
                throw ConfigurationError("\(value): environment variable \(name) for \(what) is not set")
            }
            return Array(text.utf8)
        }
        let full = path(value)
        do {
            return [UInt8](try Data(contentsOf: URL(fileURLWithPath: full)))
        } catch {
            throw ConfigurationError("\(full): cannot read \(what) (\(ServerConfiguration.reason(error)))")
        }
    }
}

extension String {
    func trimmingSuffix(_ suffix: String) -> String {
        var text = self
        while text.hasSuffix(suffix) { text.removeLast(suffix.count) }
        return text
    }
}
