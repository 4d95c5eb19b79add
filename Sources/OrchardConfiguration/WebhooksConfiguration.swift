import Foundation
import OrchardCore
import OrchardServices

extension ConfigurationFile {
    /// `merchants[].webhook`: where the merchant's events go and the secret they are signed with
    /// (the same shape as a registered merchant's settings, whose secrets are the values themselves).
    public typealias MerchantWebhook = MerchantWebhookSection

    /// `webhooks`: how deliveries are retried (every merchant alike).
    public struct Webhooks: Codable, Sendable {
        /// The wait before the first retry, doubling after each (default 30).
        public var firstRetrySeconds: Int?
        /// The longest wait between retries (default 3600).
        public var maximumRetrySeconds: Int?
        /// How long an event is retried before it is `failed` (default 72).
        public var retryHours: Int?
        /// One attempt's deadline (default 10000).
        public var timeoutMilliseconds: Int?
        /// How often the outbox is read (default 1000).
        public var pollIntervalMilliseconds: Int?
        /// Attempts in flight to one endpoint at once (default 1: its events in order).
        public var concurrencyPerEndpoint: Int?

        public init(
            firstRetrySeconds: Int? = nil, maximumRetrySeconds: Int? = nil, retryHours: Int? = nil, timeoutMilliseconds: Int? = nil,
            pollIntervalMilliseconds: Int? = nil, concurrencyPerEndpoint: Int? = nil
        ) {
            self.concurrencyPerEndpoint = concurrencyPerEndpoint
            self.firstRetrySeconds = firstRetrySeconds
            self.maximumRetrySeconds = maximumRetrySeconds
            self.retryHours = retryHours
            self.timeoutMilliseconds = timeoutMilliseconds
            self.pollIntervalMilliseconds = pollIntervalMilliseconds
        }
    }
}

extension ServerConfiguration {
    /// The shortest webhook secret accepted: 128 bits as hex is 32 characters.
    static let minimumWebhookSecret = 32

    /// The shortest `whsec_` key accepted: the Standard Webhooks specification's lower bound.
    static let minimumWebhookKey = 24

    static func resolveWebhook(_ file: ConfigurationFile.MerchantWebhook?, label: String, values: any ConfigurationReader)
        throws(ConfigurationError) -> WebhookEndpoint?
    {
        guard let file else { return nil }
        if let problem = WebhookEndpoint.check(file.url) { throw ConfigurationError("\(label).url \(problem)") }
        let secret = try resolveWebhookSecret(file.secret, label: "\(label).secret", values: values)
        var previous: Secret?
        if let reference = file.previousSecret {
            previous = try resolveWebhookSecret(reference, label: "\(label).previousSecret", values: values)
        }
        if let previous, previous.webhookKey == secret.webhookKey {
            throw ConfigurationError("\(label).previousSecret is the same key as \(label).secret: remove it, or set the new secret")
        }
        return WebhookEndpoint(url: file.url, secret: secret, previousSecret: previous)
    }

    /// A signing secret: `whsec_` and the base64 of at least ``minimumWebhookKey`` bytes (the
    /// Standard Webhooks form), or any other text of at least ``minimumWebhookSecret`` characters,
    /// whose UTF-8 bytes are the key (every secret configured before the standard was).
    static func resolveWebhookSecret(_ reference: String, label: String, values: any ConfigurationReader) throws(ConfigurationError)
        -> Secret
    {
        let text = String(decoding: try values.read(reference, what: "\(label) (env:NAME or a file)"), as: UTF8.self)
            .trimmingCharacters(in: .whitespacesAndNewlines)
        let secret = Secret(text)
        if text.hasPrefix(Secret.standardPrefix) {
            guard let key = secret.webhookKey, key.count >= minimumWebhookKey else {
                throw ConfigurationError(
                    "\(values.describe(reference)): \(label) must be whsec_ followed by the base64 of at least \(minimumWebhookKey) bytes (try `echo whsec_$(openssl rand -base64 32)`)"
                )
            }
        } else if text.utf8.count < minimumWebhookSecret {
            throw ConfigurationError(
                "\(values.describe(reference)): \(label) must be at least \(minimumWebhookSecret) characters (try `openssl rand -hex 32`)"
            )
        }
        return secret
    }

    static func resolveWebhookPolicy(_ file: ConfigurationFile.Webhooks?) throws(ConfigurationError) -> WebhookPolicy {
        let first = file?.firstRetrySeconds ?? 30
        let maximum = file?.maximumRetrySeconds ?? 3600
        let hours = file?.retryHours ?? 72
        let timeout = file?.timeoutMilliseconds ?? 10_000
        let poll = file?.pollIntervalMilliseconds ?? 1000
        let concurrency = file?.concurrencyPerEndpoint ?? 1
        guard (1...3600).contains(first), (first...86_400).contains(maximum), (1...720).contains(hours), (1000...29_000).contains(timeout),
            (100...60_000).contains(poll), (1...16).contains(concurrency)
        else {
            throw ConfigurationError(
                "webhooks: firstRetrySeconds must be 1–3600, maximumRetrySeconds from it to 86400, retryHours 1–720, timeoutMilliseconds 1000–29000, pollIntervalMilliseconds 100–60000 and concurrencyPerEndpoint 1–16"
            )
        }
        return WebhookPolicy(
            firstRetry: .seconds(first), maximumRetry: .seconds(maximum), retryWindow: .seconds(hours * 3600),
            timeout: .milliseconds(timeout), pollInterval: .milliseconds(poll), concurrencyPerEndpoint: concurrency)
    }
}
