import ApplePay

/// A stand-in for Safari's payment sheet, for `orchard-sandbox demo` and tests only: its script
/// defines `ApplePaySession` in any browser, and it mints real tokens signed by a test chain.
///
/// `buildApplication` serves it only when given one, and only the demo passes one; no
/// configuration file can turn it on.
public protocol SimulatedApplePay: Sendable {
    /// The sheet's files, by name under `/demo/`: `simulated-sheet.js` (the ES module that installs
    /// the `ApplePaySession` test double), the modules it imports and its stylesheet, and with a
    /// stand-in for Apple's JS SDK, `apple-pay-sdk.js`, which installs the sheet as the SDK installs
    /// its session in browsers without Apple Pay of their own (without it, the page installs the sheet).
    var files: [String: [UInt8]] { get }
    /// A token for `amount` (minor units) encrypted to `merchant`'s processing key and
    /// carrying SHA-256 of `applicationData`, as Safari would produce for that sheet; with
    /// `merchantToken`, a merchant token (an MPAN with a new token identifier), as Safari gives
    /// for a recurring, deferred or automatic-reload request.
    func mintToken(
        amount: Int64, currency: Currency, applicationData: [UInt8]?, paymentMethod: PaymentToken.PaymentMethod,
        merchant: MerchantConfiguration, merchantToken: Bool
    ) throws -> PaymentToken
    /// The demo's stand-in for Google Pay beside the sheet (``SimulatedGooglePay``); nil: none.
    var googlePay: (any SimulatedGooglePay)? { get }
}

extension SimulatedApplePay {
    public var googlePay: (any SimulatedGooglePay)? { nil }
}
