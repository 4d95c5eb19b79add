import OrchardCore

/// The mock processors' accounts and a merchant's `processor` section pointing at them, as the
/// server's tests and the processor clients' tests both configure them. Secrets come from the
/// environment the tests pass (`env:` references), as a deployment's would.
public enum MockProcessorSetup {
    /// Which processor, and for Worldline who decrypts the token.
    public enum Kind: String, CaseIterable, Sendable {
        case worldpay, worldlineEncrypted, worldlineDecrypted

        /// The processor's `type` and the name payments record.
        public var processorName: String { self == .worldpay ? "worldpay" : "worldline" }
    }

    public static let worldpay = MockWorldpayAccount(entity: "OrchardTest", username: "orchard-user", password: "wp-secret-password-1")
    public static let worldline = MockWorldlineAccount(merchantId: "OrchardPSPID", apiKeyId: "KEY123", secretApiKey: "wl-secret-api-key-1")
    /// What the `env:` references of ``section(_:baseURL:password:timeout:)`` read.
    public static let environment = [
        "WP_USERNAME": worldpay.username, "WP_PASSWORD": worldpay.password, "WL_SECRET": worldline.secretApiKey,
    ]

    /// The `processor` section for `kind` at the mock's `baseURL`, trusting the test CA (`ca.pem`).
    public static func section(_ kind: Kind, baseURL: String, password: String = "env:WP_PASSWORD", timeout: Int? = nil)
        -> ProcessorSection
    {
        var section: ProcessorSection
        switch kind {
        case .worldpay:
            section = ProcessorSection(
                type: "worldpay",
                [
                    "entity": .string(worldpay.entity), "username": "env:WP_USERNAME", "password": .string(password),
                    "narrative": "Orchard Test",
                ])
        case .worldlineEncrypted, .worldlineDecrypted:
            section = ProcessorSection(
                type: "worldline",
                [
                    "merchantId": .string(worldline.merchantId), "apiKeyId": .string(worldline.apiKeyId), "secretApiKey": "env:WL_SECRET",
                    "decryption": kind == .worldlineDecrypted ? "orchard" : "processor",
                ])
        }
        section["baseURL"] = .string(baseURL)
        section["caFile"] = "ca.pem"
        section["allowNonProductionHost"] = true
        section["timeoutMilliseconds"] = timeout.map { .integer($0) }
        return section
    }
}
