import ApplePay
import Crypto
import Foundation
import Logging
import OrchardCore
import OrchardServices

extension ConfigurationFile {
    /// `payments`: token checks, the reconciler and the vault.
    public struct Payments: Codable, Sendable {
        public var tokenMaximumAgeSeconds: Int?
        public var tokenMaximumFutureSkewSeconds: Int?
        /// TESTS AND DEMO ONLY: trust this root for payment tokens instead of Apple Root CA - G3.
        public var testTokenRootCertificate: String?
        /// How often the reconciler looks for unknown payments to re-send (default 30 s).
        public var reconcileIntervalSeconds: Int?
        /// The wait before an unknown payment's first re-send, doubling after each (default 30 s, at most 1 h).
        public var reconcileFirstDelaySeconds: Int?
        /// Re-sends before an unknown payment is left to an operator (default 8).
        public var reconcileMaximumAttempts: Int?
        /// The longest wait between two re-sends (default 3600 s).
        public var reconcileMaximumDelaySeconds: Int?
        /// The payment vault's key (64 hex digits) from `env:NAME` or a file; absent: `payments.key`
        /// in the state folder, created on first run.
        public var vaultKey: String?

        public init(
            tokenMaximumAgeSeconds: Int? = nil, tokenMaximumFutureSkewSeconds: Int? = nil, testTokenRootCertificate: String? = nil,
            reconcileIntervalSeconds: Int? = nil, reconcileFirstDelaySeconds: Int? = nil, reconcileMaximumAttempts: Int? = nil,
            reconcileMaximumDelaySeconds: Int? = nil, vaultKey: String? = nil
        ) {
            self.tokenMaximumAgeSeconds = tokenMaximumAgeSeconds
            self.tokenMaximumFutureSkewSeconds = tokenMaximumFutureSkewSeconds
            self.testTokenRootCertificate = testTokenRootCertificate
            self.reconcileIntervalSeconds = reconcileIntervalSeconds
            self.reconcileFirstDelaySeconds = reconcileFirstDelaySeconds
            self.reconcileMaximumAttempts = reconcileMaximumAttempts
            self.reconcileMaximumDelaySeconds = reconcileMaximumDelaySeconds
            self.vaultKey = vaultKey
        }
    }
}

extension PaymentsEngine.Policy {
    /// `payments.reconcile*`, checked. A payment is stale once it has been pending longer than the
    /// slowest configured processor call can last (its total timeout) plus a margin for the store
    /// write after it.
    init(_ file: ConfigurationFile.Payments?, merchants: [MerchantConfiguration]) throws(ConfigurationError) {
        let interval = file?.reconcileIntervalSeconds ?? 30
        let firstDelay = file?.reconcileFirstDelaySeconds ?? 30
        let maximumDelay = file?.reconcileMaximumDelaySeconds ?? 3600
        let attempts = file?.reconcileMaximumAttempts ?? 8
        guard (1...3600).contains(interval), (1...86_400).contains(firstDelay), (firstDelay...86_400).contains(maximumDelay),
            (0...100).contains(attempts)
        else {
            throw ConfigurationError(
                "payments: reconcileIntervalSeconds must be 1–3600, reconcileFirstDelaySeconds 1–86400, reconcileMaximumDelaySeconds from the first delay to 86400, and reconcileMaximumAttempts 0–100"
            )
        }
        let longest = merchants.compactMap { $0.processor.endpoint?.timeout }.max() ?? .zero
        self.init(
            staleAfter: TimeInterval(longest.components.seconds) + 5, maximumReconcileAttempts: attempts,
            firstReconcileDelay: TimeInterval(firstDelay), maximumReconcileDelay: TimeInterval(maximumDelay),
            reconcileInterval: .seconds(interval))
    }
}

extension ServerConfiguration {
    /// The payments engine for this configuration: the token root and every merchant's processing keys.
    public func makePaymentsEngine(
        repositories: Repositories, processors: PaymentProcessors, vault: PaymentVault, time: TimeSource, logger: Logger
    ) -> PaymentsEngine {
        var decryptors: [String: TokenDecryptor] = [:]
        for merchant in merchants + (platform.map { [$0] } ?? []) where !merchant.processingKeys.isEmpty {
            decryptors[merchant.merchantIdentifier] = TokenDecryptor(keys: merchant.processingKeys)
        }
        return PaymentsEngine(
            orderPayments: repositories.orderPayments, refunds: repositories.refunds, mandates: repositories.mandates,
            processors: processors, verifier: TokenVerifier(root: tokenRoot, policy: tokenPolicy),
            decryptors: decryptors, platformDecryptor: platform.flatMap { decryptors[$0.merchantIdentifier] },
            googlePay: merchants.reduce(into: [:]) { $0[$1.merchantIdentifier] = $1.googlePay }, vault: vault, time: time,
            policy: reconciliation, logger: logger)
    }

    /// The configured payment vault, or the one whose key file is in the state folder.
    public func openPaymentVault() throws(ConfigurationError) -> PaymentVault {
        if let vault { return vault }
        return try PaymentVault.load(path: vaultKeyPath)
    }

    /// The payment vault's key file when `payments.vaultKey` is not set: created at first start.
    public var vaultKeyPath: String { URL(fileURLWithPath: stateDirectory).appendingPathComponent("payments.key").path }
}

extension PaymentVault {
    /// The 32-byte key at `path`, nil when there is no file (yet): what ``load(path:)`` reads
    /// before it creates one, and what `orchard doctor` checks without creating anything.
    public static func existing(path: String) throws(ConfigurationError) -> PaymentVault? {
        guard let data = FileManager.default.contents(atPath: path) else { return nil }
        guard data.count == 32 else {
            throw ConfigurationError(
                "\(path): the payment vault key must be 32 bytes; restore it from backup (unknown payments cannot be re-sent without it)"
            )
        }
        return PaymentVault(key: SymmetricKey(data: data))
    }

    /// Reads the 32-byte key at `path`, creating it (mode 0600, never overwritten) on first run.
    public static func load(path: String) throws(ConfigurationError) -> PaymentVault {
        if let vault = try existing(path: path) { return vault }
        let key = SymmetricKey(size: .bits256)
        let descriptor = open(path, O_WRONLY | O_CREAT | O_EXCL, 0o600)
        guard descriptor >= 0 else { throw ConfigurationError("\(path): cannot create the payment vault key (errno \(errno))") }
        defer { close(descriptor) }
        let written = key.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
        guard written == 32, fsync(descriptor) == 0 else {
            throw ConfigurationError("\(path): cannot write the payment vault key (errno \(errno))")
        }
        return PaymentVault(key: key)
    }
}
