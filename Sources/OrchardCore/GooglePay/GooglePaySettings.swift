import Crypto
import Foundation
import GooglePay

/// A merchant's Google Pay settings, checked at startup: what the page asks Google for, and how
/// Orchard checks the tokens that come back.
public struct GooglePaySettings: Sendable {
    /// Google's `environment`: `TEST` gives test cards and tokens, `PRODUCTION` real ones.
    public enum Environment: String, Sendable, CaseIterable {
        case test = "TEST"
        case production = "PRODUCTION"
    }

    /// Who the token is encrypted to.
    public enum Mode: Sendable {
        /// `PAYMENT_GATEWAY`: sealed for the processor, which decrypts it; Orchard checks its
        /// signatures and hands it on unchanged.
        case gateway(name: String, merchantId: String)
        /// `DIRECT`: sealed for the merchant's own key, which Orchard holds and decrypts with.
        /// More than one key while a new one is rolled out.
        case direct(keys: [P256.KeyAgreement.PrivateKey])
    }

    /// The merchant ID from the Google Pay & Wallet Console; needed in production.
    public var merchantId: String?
    /// The name Google's sheet shows.
    public var merchantName: String
    public var environment: Environment
    public var mode: Mode
    /// `allowedCardNetworks`: `VISA`, `MASTERCARD`, `AMEX`, `DISCOVER`, `JCB`, `INTERAC`.
    public var allowedCardNetworks: [String]
    /// `allowedAuthMethods`: `CRYPTOGRAM_3DS` and, where the processor runs 3-D Secure, `PAN_ONLY`.
    public var allowedAuthMethods: [String]
    /// Google's root signing keys (`keys.json`) the intermediate keys must be signed by.
    public var signingKeys: GooglePaySigningKeys
    /// The recipient the tokens are signed for: `gateway:<gateway>` or `merchant:<merchantId>`.
    public var recipientId: String
    /// Where the page loads Google's `pay.js` from.
    public var scriptURL: String

    /// Google's documented script URL.
    public static let defaultScriptURL = "https://pay.google.com/gp/p/js/pay.js"
    /// The card networks Google's API names.
    public static let cardNetworks = ["AMEX", "DISCOVER", "INTERAC", "JCB", "MASTERCARD", "VISA"]
    /// The authentication methods Google's API names.
    public static let authMethods = ["PAN_ONLY", "CRYPTOGRAM_3DS"]

    public init(
        merchantId: String?, merchantName: String, environment: Environment, mode: Mode, allowedCardNetworks: [String],
        allowedAuthMethods: [String], signingKeys: GooglePaySigningKeys, recipientId: String, scriptURL: String = defaultScriptURL
    ) {
        self.merchantId = merchantId
        self.merchantName = merchantName
        self.environment = environment
        self.mode = mode
        self.allowedCardNetworks = allowedCardNetworks
        self.allowedAuthMethods = allowedAuthMethods
        self.signingKeys = signingKeys
        self.recipientId = recipientId
        self.scriptURL = scriptURL
    }

    /// What the page hands Google as `tokenizationSpecification`.
    public var tokenizationSpecification: JSONValue {
        switch mode {
        case .gateway(let name, let merchantId):
            ["type": "PAYMENT_GATEWAY", "parameters": ["gateway": .string(name), "gatewayMerchantId": .string(merchantId)]]
        case .direct(let keys):
            [
                "type": "DIRECT",
                "parameters": [
                    "protocolVersion": "ECv2",
                    "publicKey": .string(Data(keys[0].publicKey.x963Representation).base64EncodedString()),
                ],
            ]
        }
    }
}

/// What a page hands Google's `pay.js` for a merchant: where the script is, `PaymentsClient`'s
/// options and the `allowedPaymentMethods` of `isReadyToPay` and `PaymentDataRequest`.
public struct GooglePayPageSettings: Codable, Sendable, Equatable {
    public struct MerchantInfo: Codable, Sendable, Equatable {
        public var merchantName: String
        public var merchantId: String?
    }

    public var script: String
    /// How long the page waits for the script; set by the server from the checkout page's settings.
    public var scriptTimeoutMs: Int?
    public var environment: String
    public var merchantInfo: MerchantInfo
    public var allowedPaymentMethods: [JSONValue]

    public init(_ settings: GooglePaySettings, scriptTimeoutMs: Int? = nil) {
        script = settings.scriptURL
        self.scriptTimeoutMs = scriptTimeoutMs
        environment = settings.environment.rawValue
        merchantInfo = MerchantInfo(merchantName: settings.merchantName, merchantId: settings.merchantId)
        allowedPaymentMethods = [
            [
                "type": "CARD",
                "parameters": [
                    "allowedAuthMethods": .array(settings.allowedAuthMethods.map(JSONValue.string)),
                    "allowedCardNetworks": .array(settings.allowedCardNetworks.map(JSONValue.string)),
                ],
                "tokenizationSpecification": settings.tokenizationSpecification,
            ]
        ]
    }
}
