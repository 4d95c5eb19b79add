import Foundation
import OrchardCore
import OrchardServices

extension CheckoutPageSettings {
    /// The checked settings. An integrity hash needs a pinned version: `1.latest` changes under
    /// it, and the browser would then refuse the script on every page.
    init(_ checkout: ConfigurationFile.Checkout?, sdk: URL?) throws(ConfigurationError) {
        self.init()
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
                "checkout.applePaySDKIntegrity cannot hold for \(sdk.absoluteString), which changes whenever Apple updates it: pin a version with the hash Apple publishes for it (…/jsapi/v1.3.8/apple-pay-sdk.js, see docs/configuration.md) or leave the hash out"
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

extension AdminToken {
    /// `admin.token` from `env:NAME` or a file: at least ``minimumLength`` characters.
    static func load(_ value: String, values: ConfigurationValues) throws(ConfigurationError) -> AdminToken {
        let text = String(decoding: try values.read(value, what: "admin.token"), as: UTF8.self)
            .trimmingCharacters(in: .whitespacesAndNewlines)
        guard text.utf8.count >= minimumLength else {
            throw ConfigurationError(
                "\(values.describe(value)): admin.token must be at least \(minimumLength) characters (try `openssl rand -hex 32`)")
        }
        return AdminToken(text)
    }
}
