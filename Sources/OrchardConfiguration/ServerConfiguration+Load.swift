import ApplePay
import Foundation
import OrchardCore
import OrchardServices
import SwiftASN1
import X509

extension ServerConfiguration {
    /// Loads a JSON configuration file, resolves relative paths against its folder, reads
    /// every certificate, key and association file, and checks them at `time.now`.
    ///
    /// - Parameter processors: the drivers of the processor types this program is built with;
    ///   `merchants[].processor` may name only those.
    public static func load(
        path: String,
        environment: [String: String] = ProcessInfo.processInfo.environment,
        time: TimeSource = .system,
        processors: [any ProcessorDriver]
    ) throws(ConfigurationError) -> ServerConfiguration {
        let file = try ConfigurationFile.load(path: path)
        let folder = URL(fileURLWithPath: path).deletingLastPathComponent().path
        return try resolve(file, relativeTo: folder, environment: environment, time: time, processors: processors)
    }

    /// Resolves an already-decoded configuration (paths relative to `folder`).
    public static func resolve(
        _ file: ConfigurationFile, relativeTo folder: String,
        environment: [String: String] = ProcessInfo.processInfo.environment,
        time: TimeSource = .system,
        processors: [any ProcessorDriver] = [RecordOnlyDriver()]
    ) throws(ConfigurationError) -> ServerConfiguration {
        let values = ConfigurationValues(folder: folder, environment: environment)
        let gateway = try resolveGateway(file.appleGateway, values: values)
        let merchants = try resolveMerchants(file.merchants, values: values, time: time, processors: processors)
        let (maxBody, port) = try resolveServer(file.server)
        let payments = file.payments
        let sdk = try Self.applePaySDK(file.checkout?.applePaySDK)
        var resolved = ServerConfiguration(
            host: file.server?.host ?? "127.0.0.1",
            port: port,
            publicDirectory: try resolvePublicDirectory(file.server?.publicDirectory, values: values),
            maxBodyBytes: maxBody,
            gateway: gateway,
            merchants: merchants,
            tokenRoot: try resolveTokenRoot(payments, values: values),
            tokenPolicy: try resolveTokenPolicy(payments),
            reconciliation: try PaymentsEngine.Policy(payments, merchants: merchants),
            vault: try payments?.vaultKey.map { value throws(ConfigurationError) in
                try PaymentVault.parseKey(values.read(value, what: "payments.vaultKey"), name: values.describe(value))
            },
            trustsTestTokenRoot: payments?.testTokenRootCertificate != nil,
            stateDirectory: values.path(file.stateDirectory ?? "state"),
            applePaySDK: sdk,
            checkoutPage: try CheckoutPageSettings(file.checkout, sdk: sdk),
            platform: try file.platformIntegrator.map { integrator throws(ConfigurationError) in
                try loadPlatform(integrator, source: values, time: time)
            },
            adminToken: try file.admin?.token.map { value throws(ConfigurationError) in try AdminToken.load(value, values: values) },
            webhooks: try resolveWebhookPolicy(file.webhooks), processorDrivers: processors,
            settingsVault: try file.platformIntegrator?.settingsKey.map { value throws(ConfigurationError) in
                try loadSettingsVault(value, values: values)
            },
            metrics: try resolveMetrics(file.metrics, serverPort: port), log: try resolveLog(file.log),
            drainTimeout: try resolveDrainTimeout(file.server), store: try resolveStore(file.store, values: values))
        try resolved.resolveOperations(file, values: values)
        resolved.traceExport = try resolveTraceExport(file.tracing)
        resolved.time = time
        if case .postgres = resolved.store, resolved.vault == nil {
            // Each instance would otherwise seal with its own key file: one could not re-send
            // another's unknown payment, and client secrets would differ between instances.
            throw ConfigurationError(
                "store.postgres needs payments.vaultKey, the same on every instance (generate one with: openssl rand -hex 32)")
        }
        return resolved
    }

    /// `appleGateway`: an https Apple host (or an allowed test host), its trust and timeouts.
    static func resolveGateway(_ gateway: ConfigurationFile.AppleGateway?, values: ConfigurationValues) throws(ConfigurationError)
        -> RemoteEndpoint
    {
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
        var trust = RemoteEndpoint.Trust.system
        if let caFile = gateway?.caFile {
            let bytes = try values.read(caFile, what: "appleGateway.caFile")
            guard String(decoding: bytes, as: UTF8.self).contains("-----BEGIN CERTIFICATE-----") else {
                throw ConfigurationError("\(values.describe(caFile)): appleGateway.caFile holds no PEM certificate")
            }
            trust = .caPEM(bytes)
        }
        let connect = Duration.milliseconds(gateway?.connectTimeoutMilliseconds ?? 3000)
        let total = Duration.milliseconds(gateway?.timeoutMilliseconds ?? 10_000)
        // Safari gives up on merchant validation at 30 s; the answer must reach it before that.
        guard connect > .zero, connect <= total, total <= .seconds(29) else {
            throw ConfigurationError("appleGateway: timeouts must be positive, connect ≤ total, and total ≤ 29 s (Safari gives up at 30 s)")
        }
        return RemoteEndpoint(baseURL: baseURL, trust: trust, connectTimeout: connect, timeout: total, isProductionHost: isApple)
    }

    static func loadCatalogue(_ file: String, values: ConfigurationValues) throws(ConfigurationError) -> Catalogue {
        let bytes = try values.read(file, what: "catalogue")
        do {
            let decoder = JSONDecoder()
            decoder.dateDecodingStrategy = .iso8601
            return try decoder.decode(Catalogue.self, from: Data(bytes)).validated()
        } catch let error as ApplePayError {
            throw ConfigurationError("\(values.describe(file)): \(error.message)")
        } catch {
            throw ConfigurationError("\(values.describe(file)): invalid catalogue: \(Self.describe(error))")
        }
    }

    /// `server.publicDirectory`: a folder with the page's `index.html`; nil serves the page built into the binary.
    static func resolvePublicDirectory(_ value: String?, values: ConfigurationValues) throws(ConfigurationError) -> String? {
        guard let value else { return nil }
        let folder = values.path(value)
        guard FileManager.default.fileExists(atPath: URL(fileURLWithPath: folder).appendingPathComponent("index.html").path) else {
            throw ConfigurationError(
                "\(folder): server.publicDirectory has no index.html; point it at a copy of Orchard's Public folder, or remove it to serve the built-in checkout page"
            )
        }
        return folder
    }

    /// `server.maxBodyBytes` and `server.port`.
    static func resolveServer(_ server: ConfigurationFile.Server?) throws(ConfigurationError) -> (maxBody: Int, port: Int) {
        let maxBody = server?.maxBodyBytes ?? 16 * 1024
        guard (1024...(1 << 20)).contains(maxBody) else {
            throw ConfigurationError("server.maxBodyBytes must be between 1024 and 1048576")
        }
        let port = server?.port ?? 8080
        guard (0...65535).contains(port) else { throw ConfigurationError("server.port \(port) is out of range") }
        return (maxBody, port)
    }

    /// How old or how far in the future a token's signing time may be.
    static func resolveTokenPolicy(_ payments: ConfigurationFile.Payments?) throws(ConfigurationError) -> TokenVerifier.Policy {
        let policy = TokenVerifier.Policy(
            maximumAge: TimeInterval(payments?.tokenMaximumAgeSeconds ?? 300),
            maximumFutureSkew: TimeInterval(payments?.tokenMaximumFutureSkewSeconds ?? 60))
        guard policy.maximumAge > 0, policy.maximumAge <= 3600, policy.maximumFutureSkew >= 0, policy.maximumFutureSkew <= 600 else {
            throw ConfigurationError("payments: tokenMaximumAgeSeconds must be 1–3600 and tokenMaximumFutureSkewSeconds 0–600")
        }
        return policy
    }

    /// Apple Root CA - G3, unless a test root is configured (tests and the demo).
    static func resolveTokenRoot(_ payments: ConfigurationFile.Payments?, values: ConfigurationValues) throws(ConfigurationError)
        -> Certificate
    {
        guard let rootFile = payments?.testTokenRootCertificate else { return AppleRootCA.g3 }
        let text = String(decoding: try values.read(rootFile, what: "payments.testTokenRootCertificate"), as: UTF8.self)
        guard let root = try? Certificate(pemEncoded: text) else {
            throw ConfigurationError("\(values.describe(rootFile)): payments.testTokenRootCertificate is not a PEM certificate")
        }
        return root
    }

    /// `platformIntegrator.settingsKey`: 64 hex digits, `env:NAME` or a file.
    static func loadSettingsVault(_ value: String, values: ConfigurationValues) throws(ConfigurationError) -> SettingsVault {
        SettingsVault(
            key: try PaymentVault.parseHexKey(
                values.read(value, what: "platformIntegrator.settingsKey"), name: values.describe(value),
                setting: "platformIntegrator.settingsKey"))
    }

    static func loadPlatform(
        _ integrator: ConfigurationFile.PlatformIntegrator, source: ConfigurationValues, time: TimeSource
    ) throws(ConfigurationError) -> MerchantConfiguration {
        let identityFiles = IdentityFiles(
            pkcs12: integrator.identity, certificate: integrator.identityCertificate, key: integrator.identityKey,
            keyPassword: integrator.identityKeyPassword, section: "platformIntegrator.")
        let identity = try loadIdentity(identityFiles, values: source, time: time)
        guard MerchantRegistrationRules.isValidPartnerIdentifier(integrator.merchantIdentifier) else {
            throw ConfigurationError(
                "platformIntegrator.merchantIdentifier \(integrator.merchantIdentifier.debugDescription) is not a merchant ID")
        }
        let association = try integrator.domainAssociationFile.map { file throws(ConfigurationError) in
            try source.read(file, what: "platformIntegrator.domainAssociationFile")
        }
        let keys = try loadProcessingKeys(
            integrator.processingKeys ?? [], merchantIdentifier: integrator.merchantIdentifier, source: source, time: time)
        // Registered merchants' processors are set at run time, so nothing here could check that one decrypts.
        if let held = keys.firstIndex(where: { $0.processorHeldScheme != nil }) {
            throw ConfigurationError(
                "platformIntegrator.processingKeys[\(held)] is a certificate alone: the platform's keys need their private key (pkcs12, or privateKey and certificate)"
            )
        }
        var platform = MerchantConfiguration(
            merchantIdentifier: integrator.merchantIdentifier, displayName: integrator.merchantIdentifier, domains: [],
            identity: identity, identitySource: identityFiles.source(source), domainAssociation: association,
            catalogue: nil, processingKeys: keys)
        platform.webhook = try resolveWebhook(integrator.webhook, label: "platformIntegrator.webhook", values: source)
        return platform
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
        DecodingErrorText.describe(error)
    }
}

extension ConfigurationFile {
    /// Reads and decodes a configuration file, without resolving or checking what it names.
    public static func load(path: String) throws(ConfigurationError) -> ConfigurationFile {
        let data: Data
        do {
            data = try Data(contentsOf: URL(fileURLWithPath: path))
        } catch {
            throw ConfigurationError("\(path): cannot read the configuration file (\(ServerConfiguration.reason(error)))")
        }
        let file: ConfigurationFile
        do {
            file = try JSONDecoder().decode(ConfigurationFile.self, from: data)
        } catch {
            throw ConfigurationError("\(path): invalid configuration: \(ServerConfiguration.describe(error))")
        }
        if let json = try? JSONDecoder().decode(JSONShape.self, from: data), let unknown = unknownKey(in: json) {
            throw ConfigurationError(
                "\(path): invalid configuration: \(unknown.path): not a setting (this section reads: \(unknown.known))")
        }
        return file
    }

    /// Every key path the loader reads (lists as `name[]`): from its own decoding, so it cannot drift.
    static let readKeys: Set<String> = Set((try? DecodedKeys.of(ConfigurationFile.self).keys).map(Array.init) ?? [])
    /// The sections whose decoding reads their keys as they come (`allKeys`), to check them itself.
    static let openSections: Set<String> = (try? DecodedKeys.openObjects(ConfigurationFile.self)) ?? []

    /// The first key the file sets that the loader does not read (a typo would otherwise be
    /// ignored silently), with the keys read beside it. Sections the loader reads as they come
    /// (a processor's, whose driver checks its keys itself) are left to their reader.
    static func unknownKey(in json: JSONShape, path: String = "") -> (path: String, known: String)? {
        let object: [String: JSONShape]
        switch json {
        case .array(let list):
            for element in list {
                if let unknown = unknownKey(in: element, path: path + "[]") { return unknown }
            }
            return nil
        case .scalar: return nil
        case .object(let fields): object = fields
        }
        let prefix = path.isEmpty ? "" : path + "."
        let known = Set(
            readKeys.filter { $0.hasPrefix(prefix) }.compactMap { key -> String? in
                let name = key.dropFirst(prefix.count).split(separator: ".").first.map(String.init) ?? ""
                return name.hasSuffix("[]") ? String(name.dropLast(2)) : name
            })
        // A section that reads its keys as they come checks them itself: a processor's against its
        // type's keys, the strict sections against their own lists.
        let checksItself = openSections.contains(path)
        guard !known.isEmpty || checksItself else { return nil }
        for key in object.keys.sorted() {
            guard known.contains(key) || checksItself else { return (prefix + key, known.sorted().joined(separator: ", ")) }
            if let value = object[key], let unknown = unknownKey(in: value, path: prefix + key) { return unknown }
        }
        return nil
    }

    /// The `appleGateway` section, checked: where live checks go.
    public func gatewayEndpoint(relativeTo folder: String, environment: [String: String]) throws(ConfigurationError) -> RemoteEndpoint {
        try ServerConfiguration.resolveGateway(appleGateway, values: ConfigurationValues(folder: folder, environment: environment))
    }
}

/// A JSON document's shape only, decoded by type: its objects' keys and its arrays, for the
/// unknown-key check (the values themselves are read by the configuration's own types).
indirect enum JSONShape: Decodable {
    case object([String: JSONShape])
    case array([JSONShape])
    case scalar

    init(from decoder: any Decoder) throws {
        if let object = try? decoder.container(keyedBy: Key.self) {
            var fields: [String: JSONShape] = [:]
            for key in object.allKeys { fields[key.stringValue] = try object.decode(JSONShape.self, forKey: key) }
            self = .object(fields)
        } else if var list = try? decoder.unkeyedContainer() {
            var elements: [JSONShape] = []
            while !list.isAtEnd { elements.append(try list.decode(JSONShape.self)) }
            self = .array(elements)
        } else {
            self = .scalar
        }
    }

    struct Key: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init?(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }
}
