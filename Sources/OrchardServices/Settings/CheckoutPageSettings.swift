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
}
