import Foundation
import OrchardCore

/// How the checkout page takes Apple Pay (`checkout.applePayMode`) and loads Apple's JS SDK
/// (`checkout.applePaySDKIntegrity` and `checkout.applePaySDKTimeoutMilliseconds`).
public struct CheckoutPageSettings: Sendable, Equatable {
    /// The browser API the page pays through.
    public enum Mode: String, Sendable, Equatable, CaseIterable {
        /// Apple Pay JS's `ApplePaySession`.
        case session
        /// The W3C Payment Request API with Apple Pay's payment method, where the browser has it.
        case paymentRequest = "paymentrequest"
    }

    public var mode = Mode.session
    /// The Subresource Integrity hash the browser checks the script against; nil: none.
    public var integrity: String?
    /// How long a browser without Apple Pay of its own (Chrome, Edge, Firefox) waits for the
    /// SDK before the page says Apple Pay is unavailable.
    public var timeoutMilliseconds = 5_000

    public static let timeoutRange = 1_000...30_000

    public init(mode: Mode = .session, integrity: String? = nil, timeoutMilliseconds: Int = 5_000) {
        self.mode = mode
        self.integrity = integrity
        self.timeoutMilliseconds = timeoutMilliseconds
    }

    /// The checked settings. An integrity hash needs a pinned version: `1.latest` changes under
    /// it, and the browser would then refuse the script on every page.
    init(_ checkout: ConfigurationFile.Checkout?, sdk: URL?) throws(ConfigurationError) {
        if let mode = checkout?.applePayMode {
            guard let known = Mode(rawValue: mode) else {
                throw ConfigurationError(
                    "checkout.applePayMode must be \"session\" (ApplePaySession) or \"paymentrequest\" (the Payment Request API), not \"\(mode)\""
                )
            }
            self.mode = known
        }
        if let timeout = checkout?.applePaySDKTimeoutMilliseconds {
            guard Self.timeoutRange.contains(timeout) else {
                throw ConfigurationError(
                    "checkout.applePaySDKTimeoutMilliseconds must be \(Self.timeoutRange.lowerBound)–\(Self.timeoutRange.upperBound)")
            }
            timeoutMilliseconds = timeout
        }
        guard let integrity = checkout?.applePaySDKIntegrity else { return }
        guard let sdk else { throw ConfigurationError("checkout.applePaySDKIntegrity needs checkout.applePaySDK") }
        guard !sdk.path.contains("latest") else {
            throw ConfigurationError(
                "checkout.applePaySDKIntegrity cannot hold for \(sdk.absoluteString), which changes whenever Apple updates it: pin a version (…/jsapi/1.2.0/apple-pay-sdk.js) or leave the hash out"
            )
        }
        guard Self.isIntegrity(integrity) else {
            throw ConfigurationError("checkout.applePaySDKIntegrity must be sha256-, sha384- or sha512- and the digest in base64")
        }
        self.integrity = integrity
    }

    /// `sha384-<base64 of 48 bytes>` and its SHA-256 and SHA-512 forms (the SRI specification's hashes).
    static func isIntegrity(_ value: String) -> Bool {
        let lengths = ["sha256-": 32, "sha384-": 48, "sha512-": 64]
        guard let (prefix, length) = lengths.first(where: { value.hasPrefix($0.key) }) else { return false }
        return Data(base64Encoded: String(value.dropFirst(prefix.count)))?.count == length
    }
}
