import Foundation
import OrchardCore
import OrchardServices

extension ConfigurationFile {
    /// `tokenEvents`: how the token-event inbox fetches Apple's notified events. The fetch
    /// budgets and caps are ``TokenEventPolicy``'s own; only the timing is set here.
    public struct TokenEvents: Codable, Sendable {
        /// How often the inbox is read for due notifications (default 1000).
        public var pollIntervalMilliseconds: Int?
        /// The wait before the first retry when Apple cannot be asked, doubling after each (default 30).
        public var firstRetrySeconds: Int?
        /// The longest wait between retries (default 3600).
        public var maximumRetrySeconds: Int?
        /// How long a notification is retried before it is `failed` (default 72).
        public var retryHours: Int?

        public init(
            pollIntervalMilliseconds: Int? = nil, firstRetrySeconds: Int? = nil, maximumRetrySeconds: Int? = nil, retryHours: Int? = nil
        ) {
            self.pollIntervalMilliseconds = pollIntervalMilliseconds
            self.firstRetrySeconds = firstRetrySeconds
            self.maximumRetrySeconds = maximumRetrySeconds
            self.retryHours = retryHours
        }

        enum CodingKeys: String, CodingKey, CaseIterable {
            case pollIntervalMilliseconds, firstRetrySeconds, maximumRetrySeconds, retryHours
        }

        public init(from decoder: any Decoder) throws {
            try StrictKeys.check(decoder, known: CodingKeys.allCases.map(\.rawValue))
            let container = try decoder.container(keyedBy: CodingKeys.self)
            pollIntervalMilliseconds = try container.decodeIfPresent(Int.self, forKey: .pollIntervalMilliseconds)
            firstRetrySeconds = try container.decodeIfPresent(Int.self, forKey: .firstRetrySeconds)
            maximumRetrySeconds = try container.decodeIfPresent(Int.self, forKey: .maximumRetrySeconds)
            retryHours = try container.decodeIfPresent(Int.self, forKey: .retryHours)
        }
    }
}

extension ServerConfiguration {
    static func resolveTokenEvents(_ file: ConfigurationFile.TokenEvents?) throws(ConfigurationError) -> TokenEventPolicy {
        var policy = TokenEventPolicy()
        let poll = file?.pollIntervalMilliseconds ?? 1000
        let first = file?.firstRetrySeconds ?? 30
        let maximum = file?.maximumRetrySeconds ?? 3600
        let hours = file?.retryHours ?? 72
        guard (100...60_000).contains(poll), (1...3600).contains(first), (first...86_400).contains(maximum), (1...720).contains(hours)
        else {
            throw ConfigurationError(
                "tokenEvents: pollIntervalMilliseconds must be 100–60000, firstRetrySeconds 1–3600, maximumRetrySeconds from it to 86400 and retryHours 1–720"
            )
        }
        policy.pollInterval = .milliseconds(poll)
        policy.firstRetry = .seconds(first)
        policy.maximumRetry = .seconds(maximum)
        policy.retryWindow = .seconds(hours * 3600)
        return policy
    }
}
