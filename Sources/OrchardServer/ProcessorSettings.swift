import ApplePay
import CurlClient
import Foundation

extension ConfigurationFile {
    /// `merchants[].processor`: where authorized payments go.
    public struct Processor: Codable, Sendable {
        /// `record` (default), `worldpay` or `worldline`.
        public var type: String
        public var baseURL: String?
        /// PEM CA bundle to trust instead of the system store (tests).
        public var caFile: String?
        /// Must be true for a host other than the processor's production or test hosts; logged.
        public var allowNonProductionHost: Bool?
        public var timeoutMilliseconds: Int?
        // Worldpay Access
        public var entity: String?
        public var username: String?
        public var password: String?
        public var narrative: String?
        // Worldline Direct
        public var merchantId: String?
        public var apiKeyId: String?
        public var secretApiKey: String?
        public var authorizationMode: String?
        /// `processor` (Worldline decrypts) or `orchard` (Orchard decrypts and sends the DPAN and cryptogram).
        public var decryption: String?

        public init(
            type: String, baseURL: String? = nil, caFile: String? = nil, allowNonProductionHost: Bool? = nil,
            timeoutMilliseconds: Int? = nil, entity: String? = nil, username: String? = nil, password: String? = nil,
            narrative: String? = nil, merchantId: String? = nil, apiKeyId: String? = nil, secretApiKey: String? = nil,
            authorizationMode: String? = nil, decryption: String? = nil
        ) {
            self.type = type
            self.baseURL = baseURL
            self.caFile = caFile
            self.allowNonProductionHost = allowNonProductionHost
            self.timeoutMilliseconds = timeoutMilliseconds
            self.entity = entity
            self.username = username
            self.password = password
            self.narrative = narrative
            self.merchantId = merchantId
            self.apiKeyId = apiKeyId
            self.secretApiKey = secretApiKey
            self.authorizationMode = authorizationMode
            self.decryption = decryption
        }
    }
}

/// A credential read from the environment or a file: never printed.
public struct Secret: Sendable, CustomStringConvertible {
    public let value: String
    public init(_ value: String) { self.value = value }
    public var description: String { "Secret(redacted)" }
}

/// How to reach a processor: its base URL (also the only host its links may point to), trust and timeouts.
public struct ProcessorConnection: Sendable {
    public var baseURL: String
    public var trust: TLSTrust
    public var timeouts: CurlTimeouts
    /// False for a test host (a mock): logged as a warning at startup.
    public var isProductionHost: Bool

    /// Whether `url` is on the configured processor origin: links outside it are never followed.
    public func owns(_ url: String) -> Bool {
        guard let base = URLComponents(string: baseURL), let other = URLComponents(string: url) else { return false }
        return other.scheme == "https" && other.user == nil && other.host?.lowercased() == base.host?.lowercased()
            && (other.port ?? 443) == (base.port ?? 443)
    }
}

/// Worldpay Access settings.
public struct WorldpaySettings: Sendable {
    public static let hosts = ["access.worldpay.com", "try.access.worldpay.com"]
    public var connection: ProcessorConnection
    public var entity: String
    public var username: Secret
    public var password: Secret
    /// `instruction.narrative.line1`: the statement line.
    public var narrative: String
}

/// Worldline Direct settings.
public struct WorldlineSettings: Sendable {
    public static let hosts = ["payment.direct.worldline-solutions.com", "payment.preprod.direct.worldline-solutions.com"]
    public enum Decryption: String, Sendable { case processor, orchard }
    public var connection: ProcessorConnection
    /// The PSPID.
    public var merchantId: String
    public var apiKeyId: String
    public var secretApiKey: Secret
    /// `FINAL_AUTHORIZATION` (settle later) or `SALE`.
    public var authorizationMode: String
    public var decryption: Decryption
}

/// A merchant's processor, resolved from configuration.
public enum ProcessorSettings: Sendable {
    case record
    case worldpay(WorldpaySettings)
    case worldline(WorldlineSettings)

    public var name: String {
        switch self {
        case .record: "record"
        case .worldpay: "worldpay"
        case .worldline: "worldline"
        }
    }

    public var connection: ProcessorConnection? {
        switch self {
        case .record: nil
        case .worldpay(let settings): settings.connection
        case .worldline(let settings): settings.connection
        }
    }
}

extension ServerConfiguration {
    static func loadProcessor(_ file: ConfigurationFile.Processor?, label: String, source: ConfigurationValues) throws(ConfigurationError)
        -> ProcessorSettings
    {
        guard let file, file.type != "record" else { return .record }
        let name = "\(label).processor"
        func required(_ value: String?, _ key: String) throws(ConfigurationError) -> String {
            guard let value, !value.trimmingCharacters(in: .whitespaces).isEmpty else {
                throw ConfigurationError("\(name).\(key) is required for a \(file.type) processor")
            }
            return value
        }
        func secret(_ value: String?, _ key: String) throws(ConfigurationError) -> Secret {
            let reference = try required(value, key)
            let text = String(
                decoding: try source.read(reference, what: "\(name).\(key) (env:NAME or a file; never the secret itself)"), as: UTF8.self
            )
            .trimmingCharacters(in: .whitespacesAndNewlines)
            guard !text.isEmpty else { throw ConfigurationError("\(source.describe(reference)): \(name).\(key) is empty") }
            return Secret(text)
        }
        switch file.type {
        case "worldpay":
            let connection = try connection(file, hosts: WorldpaySettings.hosts, name: name, source: source)
            let narrative = file.narrative ?? "Apple Pay"
            guard (1...24).contains(narrative.count) else { throw ConfigurationError("\(name).narrative must be 1–24 characters") }
            return .worldpay(
                WorldpaySettings(
                    connection: connection, entity: try required(file.entity, "entity"), username: try secret(file.username, "username"),
                    password: try secret(file.password, "password"), narrative: narrative))
        case "worldline":
            let connection = try connection(file, hosts: WorldlineSettings.hosts, name: name, source: source)
            let mode = file.authorizationMode ?? "FINAL_AUTHORIZATION"
            guard ["FINAL_AUTHORIZATION", "SALE"].contains(mode) else {
                throw ConfigurationError("\(name).authorizationMode must be FINAL_AUTHORIZATION or SALE")
            }
            guard let decryption = WorldlineSettings.Decryption(rawValue: file.decryption ?? "processor") else {
                throw ConfigurationError("\(name).decryption must be processor (Worldline decrypts) or orchard (Orchard decrypts)")
            }
            return .worldline(
                WorldlineSettings(
                    connection: connection, merchantId: try required(file.merchantId, "merchantId"),
                    apiKeyId: try required(file.apiKeyId, "apiKeyId"), secretApiKey: try secret(file.secretApiKey, "secretApiKey"),
                    authorizationMode: mode, decryption: decryption))
        default:
            throw ConfigurationError("\(name).type must be record, worldpay or worldline (got \(file.type))")
        }
    }

    static func connection(_ file: ConfigurationFile.Processor, hosts: [String], name: String, source: ConfigurationValues)
        throws(ConfigurationError) -> ProcessorConnection
    {
        let base = (file.baseURL ?? "https://\(hosts[0])").trimmingSuffix("/")
        guard let components = URLComponents(string: base), components.scheme == "https", let host = components.host?.lowercased(),
            components.user == nil, components.query == nil, components.path.isEmpty
        else {
            throw ConfigurationError("\(name).baseURL must be an https origin like https://\(hosts[0]) (got \(base))")
        }
        let isProduction = hosts.contains(host) && (components.port ?? 443) == 443
        if !isProduction && file.allowNonProductionHost != true {
            throw ConfigurationError(
                "\(name).baseURL: \(host) is not one of \(hosts.joined(separator: ", ")); set allowNonProductionHost to true for a test processor"
            )
        }
        var trust = TLSTrust.system
        if let caFile = file.caFile {
            trust = .caPEM(try source.read(caFile, what: "\(name).caFile"))
        }
        let total = file.timeoutMilliseconds ?? 20_000
        // The page gives up after 25 s, Safari after 30 s.
        guard (1000...24_000).contains(total) else { throw ConfigurationError("\(name).timeoutMilliseconds must be 1000–24000") }
        return ProcessorConnection(
            baseURL: base, trust: trust, timeouts: CurlTimeouts(connect: .milliseconds(min(3000, total)), total: .milliseconds(total)),
            isProductionHost: isProduction)
    }
}
