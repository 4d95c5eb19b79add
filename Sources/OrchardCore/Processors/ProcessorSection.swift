import Foundation

/// `merchants[].processor` as written: a `type` and that processor's own keys. The section is
/// kept as read and checked by the driver of its type, so the configuration format does not
/// grow with every processor.
public struct ProcessorSection: Codable, Sendable {
    /// A key's value: what JSON configuration holds for a processor.
    public enum Value: Codable, Sendable, Equatable, ExpressibleByStringLiteral, ExpressibleByIntegerLiteral,
        ExpressibleByBooleanLiteral
    {
        case string(String)
        case integer(Int)
        case bool(Bool)

        public init(stringLiteral value: String) { self = .string(value) }
        public init(integerLiteral value: Int) { self = .integer(value) }
        public init(booleanLiteral value: Bool) { self = .bool(value) }

        public init(from decoder: any Decoder) throws {
            let container = try decoder.singleValueContainer()
            if let value = try? container.decode(Bool.self) {
                self = .bool(value)
            } else if let value = try? container.decode(Int.self) {
                self = .integer(value)
            } else {
                self = .string(try container.decode(String.self))
            }
        }

        public func encode(to encoder: any Encoder) throws {
            var container = encoder.singleValueContainer()
            switch self {
            case .string(let value): try container.encode(value)
            case .integer(let value): try container.encode(value)
            case .bool(let value): try container.encode(value)
            }
        }
    }

    /// `record` (default), `worldpay`, `worldline`, …
    public var type: String
    public var fields: [String: Value]
    /// The section's place in the file (`merchants[0] (merchant.x).processor`), set by the loader for messages.
    public var label = "processor"
    /// Who wrote it, set by the loader: it decides which origins and trust ``endpoint(hosts:values:)`` accepts.
    public var writtenBy: Author = .configurationFile

    /// Who wrote a section.
    public enum Author: Sendable {
        /// The configuration file: any origin with `allowNonProductionHost`, any `caFile`.
        case configurationFile
        /// The admin API, for a registered merchant: the processor's own origins with the system's
        /// trust store, or one of `testOrigins` (the configuration file's
        /// `outbound.registeredMerchants.testProcessors`) with the trust the file gives it.
        /// `stored`: settings saved earlier, being loaded; an older Orchard took
        /// `allowNonProductionHost` and `caFile` here, and they are ignored (the file's trust
        /// counts) when `baseURL` is one of `testOrigins`, so listing it there lets such a store start.
        case adminAPI(testOrigins: [RemoteEndpoint], stored: Bool)
    }

    public init(type: String, _ fields: [String: Value] = [:]) {
        self.type = type
        self.fields = fields
    }

    public subscript(key: String) -> Value? {
        get { fields[key] }
        set { fields[key] = newValue }
    }

    struct Key: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: Key.self)
        type = try container.decode(String.self, forKey: Key(stringValue: "type"))
        fields = [:]
        for key in container.allKeys where key.stringValue != "type" {
            fields[key.stringValue] = try container.decode(Value.self, forKey: key)
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Key.self)
        try container.encode(type, forKey: Key(stringValue: "type"))
        for (key, value) in fields { try container.encode(value, forKey: Key(stringValue: key)) }
    }

    /// Refuses keys the processor does not read (a typo would otherwise be ignored silently).
    public func expectOnly(_ keys: Set<String>) throws(ConfigurationError) {
        if let unknown = fields.keys.sorted().first(where: { !keys.contains($0) }) {
            let known = keys.isEmpty ? "none" : keys.sorted().joined(separator: ", ")
            throw ConfigurationError("\(label).\(unknown) is not a \(type) setting (it reads: \(known))")
        }
    }

    /// A string key, nil when absent.
    public func string(_ key: String) throws(ConfigurationError) -> String? {
        switch fields[key] {
        case nil: return nil
        case .string(let value): return value
        default: throw ConfigurationError("\(label).\(key) must be a string")
        }
    }

    /// A string key that must be present and not blank.
    public func required(_ key: String) throws(ConfigurationError) -> String {
        guard let value = try string(key), !value.trimmingCharacters(in: .whitespaces).isEmpty else {
            throw ConfigurationError("\(label).\(key) is required for a \(type) processor")
        }
        return value
    }

    public func integer(_ key: String) throws(ConfigurationError) -> Int? {
        switch fields[key] {
        case nil: return nil
        case .integer(let value): return value
        default: throw ConfigurationError("\(label).\(key) must be a whole number")
        }
    }

    public func bool(_ key: String) throws(ConfigurationError) -> Bool? {
        switch fields[key] {
        case nil: return nil
        case .bool(let value): return value
        default: throw ConfigurationError("\(label).\(key) must be true or false")
        }
    }

    /// A credential named by `env:NAME` or a file, never written in the configuration itself.
    public func secret(_ key: String, values: any ConfigurationReader) throws(ConfigurationError) -> Secret {
        let reference = try required(key)
        let bytes = try values.read(reference, what: "\(label).\(key) (env:NAME or a file; never the secret itself)")
        let text = String(decoding: bytes, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        guard !text.isEmpty else { throw ConfigurationError("\(values.describe(reference)): \(label).\(key) is empty") }
        return Secret(text)
    }

    /// The keys ``endpoint(hosts:values:)`` reads.
    public static let endpointKeys: Set<String> = ["baseURL", "caFile", "allowNonProductionHost", "timeoutMilliseconds"]

    /// `baseURL` (default the first of `hosts`), `caFile`, `allowNonProductionHost` (required for a
    /// host not in `hosts`) and `timeoutMilliseconds` (1000–24000: the page gives up after 25 s,
    /// Safari after 30 s). Through the admin API (``writtenBy``) neither `caFile` nor
    /// `allowNonProductionHost` is accepted: a registered merchant's processor is one of `hosts`
    /// with the system's trust store, or a test origin the configuration file lists.
    public func endpoint(hosts: [String], values: any ConfigurationReader) throws(ConfigurationError) -> RemoteEndpoint {
        let base = (try string("baseURL") ?? "https://\(hosts[0])").trimmingSuffix("/")
        guard let components = URLComponents(string: base), components.scheme == "https", let host = components.host?.lowercased(),
            components.user == nil, components.query == nil, components.path.isEmpty
        else {
            throw ConfigurationError("\(label).baseURL must be an https origin like https://\(hosts[0]) (got \(base))")
        }
        let isProduction = hosts.contains(host) && (components.port ?? 443) == 443
        var trust = RemoteEndpoint.Trust.system
        switch writtenBy {
        case .configurationFile:
            let allowed = try bool("allowNonProductionHost") == true
            if !isProduction && !allowed {
                throw ConfigurationError(
                    "\(label).baseURL: \(host) is not one of \(hosts.joined(separator: ", ")); set allowNonProductionHost to true for a test processor"
                )
            }
            if let caFile = try string("caFile") {
                trust = .caPEM(try values.read(caFile, what: "\(label).caFile"))
            }
        case .adminAPI(let testOrigins, let stored):
            let test = testOrigins.first { $0.owns(base) }
            if let key = ["allowNonProductionHost", "caFile"].first(where: { fields[$0] != nil }), !(stored && test != nil) {
                throw ConfigurationError(
                    "\(label).\(key) is not accepted through the admin API: a registered merchant's processor is \(hosts.joined(separator: " or ")) with the system's trust store (an operator lists test processors, with their CA, in the configuration file's outbound.registeredMerchants.testProcessors)"
                )
            }
            if !isProduction {
                guard let test else {
                    throw ConfigurationError(
                        "\(label).baseURL: \(base) is not \(hosts.map { "https://\($0)" }.joined(separator: " or ")); a registered merchant's processor must be one of them"
                    )
                }
                trust = test.trust
            }
        }
        let total = try integer("timeoutMilliseconds") ?? 20_000
        guard (1000...24_000).contains(total) else { throw ConfigurationError("\(label).timeoutMilliseconds must be 1000–24000") }
        return RemoteEndpoint(
            baseURL: base, trust: trust, connectTimeout: .milliseconds(min(3000, total)), timeout: .milliseconds(total),
            isProductionHost: isProduction)
    }
}
