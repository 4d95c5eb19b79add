import Foundation
import OrchardCore
import OrchardServices

extension ConfigurationFile {
    /// `guard`: the background checks of domains, certificates and registrations.
    public struct Guard: Codable, Sendable {
        /// Default true: Apple Pay should never switch off unnoticed.
        public var enabled: Bool?
        /// Between two checks of the same domain, certificate or registration (default 900).
        public var intervalSeconds: Int?
        /// The second look that confirms a failure, and the look after a repair (default 60).
        public var recheckSeconds: Int?
        /// Checks in flight at once on this instance (default 4).
        public var concurrency: Int?

        public init(enabled: Bool? = nil, intervalSeconds: Int? = nil, recheckSeconds: Int? = nil, concurrency: Int? = nil) {
            self.enabled = enabled
            self.intervalSeconds = intervalSeconds
            self.recheckSeconds = recheckSeconds
            self.concurrency = concurrency
        }

        enum CodingKeys: String, CodingKey, CaseIterable {
            case enabled, intervalSeconds, recheckSeconds, concurrency
        }

        public init(from decoder: any Decoder) throws {
            try StrictKeys.check(decoder, known: CodingKeys.allCases.map(\.rawValue))
            let container = try decoder.container(keyedBy: CodingKeys.self)
            enabled = try container.decodeIfPresent(Bool.self, forKey: .enabled)
            intervalSeconds = try container.decodeIfPresent(Int.self, forKey: .intervalSeconds)
            recheckSeconds = try container.decodeIfPresent(Int.self, forKey: .recheckSeconds)
            concurrency = try container.decodeIfPresent(Int.self, forKey: .concurrency)
        }
    }
}

/// The guard as configured: whether it runs, and its policy and concurrency.
public struct GuardSettings: Sendable {
    public var enabled = true
    public var policy = GuardPolicy(interval: 900, recheck: 60)
    public var concurrency = 4

    public init() {}
}

extension ServerConfiguration {
    static func resolveGuard(_ file: ConfigurationFile.Guard?) throws(ConfigurationError) -> GuardSettings {
        var settings = GuardSettings()
        let interval = file?.intervalSeconds ?? 900
        let recheck = file?.recheckSeconds ?? 60
        let concurrency = file?.concurrency ?? 4
        guard (60...86_400).contains(interval), (5...3600).contains(recheck), recheck < interval, (1...32).contains(concurrency) else {
            throw ConfigurationError(
                "guard: intervalSeconds must be 60–86400, recheckSeconds 5–3600 and below intervalSeconds, concurrency 1–32")
        }
        settings.enabled = file?.enabled ?? true
        settings.policy = GuardPolicy(interval: TimeInterval(interval), recheck: TimeInterval(recheck))
        settings.concurrency = concurrency
        return settings
    }
}
