import ApplePay
import Foundation

/// What `GET /v1/merchant` shows the holder of a secret API key: which merchant the key is, where
/// it sells, how its payments are processed and which currencies (with their minor-unit
/// exponents) a payment request may be in. A platform checks a key with it when it is entered.
public struct APIMerchantView: Codable, Sendable, Equatable {
    public struct CurrencyView: Codable, Sendable, Equatable {
        public var code: String
        /// Digits after the decimal point: amounts are in units of 10^-exponent (JPY 0, EUR 2, KWD 3).
        public var exponent: Int
    }

    public var merchantIdentifier: String
    public var displayName: String
    public var domains: [String]
    /// `record`, `worldpay` or `worldline`.
    public var processor: String
    /// `applePay`, and `googlePay` when the merchant takes it.
    public var wallets: [String]
    /// Whether paid orders go into the shopper's Wallet.
    public var walletOrders: Bool
    /// Whether the processor is its production environment, where money moves: false for its test
    /// environment, a mock, or `record` (nothing is called).
    public var livemode: Bool
    public var currencies: [CurrencyView]

    public init(_ merchant: MerchantConfiguration) {
        merchantIdentifier = merchant.merchantIdentifier
        displayName = merchant.displayName
        domains = merchant.domains
        processor = merchant.processor.type
        wallets = ["applePay"] + (merchant.googlePay == nil ? [] : ["googlePay"])
        walletOrders = merchant.walletOrders != nil
        livemode = merchant.processor.livemode
        currencies = Currency.all.map { CurrencyView(code: $0.code, exponent: $0.exponent) }
    }
}
