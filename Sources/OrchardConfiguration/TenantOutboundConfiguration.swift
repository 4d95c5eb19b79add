import Foundation
import OrchardCore
import OrchardServices

extension ConfigurationFile.Outbound {
    /// `outbound.registeredMerchants`: what registered merchants' destinations may reach besides
    /// public addresses and Worldpay's and Worldline's own origins. Only this file can say it (never
    /// the admin API, never the environment); each entry is logged as a warning at startup.
    public struct RegisteredMerchants: Codable, Sendable {
        /// Addresses or CIDR blocks (`127.0.0.0/8`, `::1`, `10.1.0.0/16`) their webhooks, quote URLs
        /// and processors may connect to although they are not public.
        public var privateNetworks: [String]?
        /// Processor origins (a mock, a processor's test proxy) the admin API may name as a registered
        /// merchant's `processor.baseURL`, each with the CA to trust for it.
        public var testProcessors: [TestProcessor]?

        public init(privateNetworks: [String]? = nil, testProcessors: [TestProcessor]? = nil) {
            self.privateNetworks = privateNetworks
            self.testProcessors = testProcessors
        }

        enum CodingKeys: String, CodingKey, CaseIterable { case privateNetworks, testProcessors }

        public init(from decoder: any Decoder) throws {
            try StrictKeys.check(decoder, known: CodingKeys.allCases.map(\.rawValue))
            let container = try decoder.container(keyedBy: CodingKeys.self)
            privateNetworks = try container.decodeIfPresent([String].self, forKey: .privateNetworks)
            testProcessors = try container.decodeIfPresent([TestProcessor].self, forKey: .testProcessors)
        }
    }

    /// One origin of `testProcessors`.
    public struct TestProcessor: Codable, Sendable {
        /// `https://host[:port]`.
        public var baseURL: String
        /// A PEM CA bundle (a file or `env:NAME`) to trust for it; absent: the system store.
        public var caFile: String?

        public init(baseURL: String, caFile: String? = nil) {
            self.baseURL = baseURL
            self.caFile = caFile
        }

        enum CodingKeys: String, CodingKey, CaseIterable { case baseURL, caFile }

        public init(from decoder: any Decoder) throws {
            try StrictKeys.check(decoder, known: CodingKeys.allCases.map(\.rawValue))
            let container = try decoder.container(keyedBy: CodingKeys.self)
            baseURL = try container.decode(String.self, forKey: .baseURL)
            caFile = try container.decodeIfPresent(String.self, forKey: .caFile)
        }
    }
}

extension ServerConfiguration {
    static func resolveRegisteredMerchants(_ file: ConfigurationFile.Outbound.RegisteredMerchants?, values: any ConfigurationReader)
        throws(ConfigurationError) -> (TenantDestinations, [RemoteEndpoint])
    {
        let label = "outbound.registeredMerchants"
        let networks = try (file?.privateNetworks ?? []).map { entry throws(ConfigurationError) in
            guard let network = IPNetwork(entry) else {
                throw ConfigurationError(
                    "\(label).privateNetworks: \(entry) is not an address or CIDR block (like 127.0.0.1, 10.0.0.0/8 or fd00::/8)")
            }
            return network
        }
        let processors = try (file?.testProcessors ?? []).enumerated().map { index, test throws(ConfigurationError) in
            let place = "\(label).testProcessors[\(index)]"
            let base = test.baseURL.trimmingSuffix("/")
            guard let url = URLComponents(string: base), url.scheme == "https", url.host?.isEmpty == false, url.user == nil,
                url.password == nil, url.path.isEmpty, url.query == nil, url.fragment == nil
            else {
                throw ConfigurationError("\(place).baseURL must be an https origin like https://127.0.0.1:9443 (got \(test.baseURL))")
            }
            let trust = try test.caFile.map { file throws(ConfigurationError) in
                RemoteEndpoint.Trust.caPEM(try values.read(file, what: "\(place).caFile"))
            }
            // Only the origin and trust count: each merchant's own section sets its timeouts.
            return RemoteEndpoint(
                baseURL: base, trust: trust ?? .system, connectTimeout: .seconds(3), timeout: .seconds(20), isProductionHost: false)
        }
        return (TenantDestinations(privateNetworks: networks), processors)
    }

    /// What a registered merchant's settings may name, for its processor section
    /// (``ProcessorSection/writtenBy``); `stored` when loading settings saved earlier.
    func registeredProcessorAuthor(stored: Bool) -> ProcessorSection.Author {
        .adminAPI(testOrigins: outbound.tenantTestProcessors, stored: stored)
    }
}
