import GooglePay

/// A stand-in for Google Pay's `pay.js` and Google's servers, for `orchard-sandbox demo` and tests
/// only: its script defines `google.payments.api.PaymentsClient` in any browser, with a small
/// sheet of its own, and it mints ECv2 tokens signed by a test root, never Google's.
///
/// It comes with the simulated Apple Pay sheet (``SimulatedApplePay/googlePay``): the server
/// serves it only when given one, and only the demo gives one; no configuration file can turn it on.
public protocol SimulatedGooglePay: Sendable {
    /// Its files, by name under `/demo/`: `google-pay.js` (the stand-in `pay.js`, a classic script)
    /// and the sheet's stylesheet.
    var files: [String: [UInt8]] { get }
    /// A token (the JSON string Google's API gives in `tokenizationData.token`) as Google would
    /// make it for `settings`: signed for its recipient ID, encrypted to the gateway's key in
    /// gateway mode (carrying the `gatewayMerchantId`) or to the merchant's first direct key, for
    /// `card` authenticated by `authMethod` (`CRYPTOGRAM_3DS` or `PAN_ONLY`).
    func mintToken(for settings: GooglePaySettings, card: SimulatedGooglePayCard, authMethod: GooglePayPaymentData.AuthMethod) throws
        -> String
}

/// The test cards the stand-in sheet offers: one per network, as Google's test environment does.
public struct SimulatedGooglePayCard: Sendable, Equatable {
    /// Google's `cardNetwork`: `VISA`, `MASTERCARD`, …
    public var network: String
    /// The card number (test numbers only: the networks' published test cards).
    public var pan: String

    public init(network: String, pan: String) {
        self.network = network
        self.pan = pan
    }

    /// The last four digits, Google's `cardDetails`.
    public var details: String { String(pan.suffix(4)) }

    /// The networks' published test numbers.
    public static let testCards = [
        SimulatedGooglePayCard(network: "VISA", pan: "4111111111111111"),
        SimulatedGooglePayCard(network: "MASTERCARD", pan: "5555555555554444"),
        SimulatedGooglePayCard(network: "AMEX", pan: "378282246310005"),
        SimulatedGooglePayCard(network: "DISCOVER", pan: "6011111111111117"),
        SimulatedGooglePayCard(network: "JCB", pan: "3530111333300000"),
    ]
}
