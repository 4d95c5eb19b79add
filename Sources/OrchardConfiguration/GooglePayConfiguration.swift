import Crypto
import Foundation
import GooglePay
import OrchardCore

extension ConfigurationFile {
    /// `merchants[].googlePay`: Google Pay beside Apple Pay, off when absent.
    public struct GooglePay: Codable, Sendable {
        /// The merchant ID from the Google Pay & Wallet Console (needed in `PRODUCTION` and in direct mode).
        public var merchantId: String?
        /// The name Google's sheet shows (default: the merchant's `displayName`).
        public var merchantName: String?
        /// `TEST` (the default) or `PRODUCTION`.
        public var environment: String?
        /// Gateway mode: the processor's Google Pay gateway name (`worldpay`, `worldlinedirect`).
        public var gateway: String?
        /// Gateway mode: the merchant's ID at that gateway.
        public var gatewayMerchantId: String?
        /// Direct mode: the merchant's own ECv2 private keys (P-256, PEM), the first one offered to Google.
        public var directKeys: [String]?
        /// Direct mode: the recipient ID tokens are signed for (default `merchant:<merchantId>`).
        public var recipientId: String?
        /// Google's root signing keys, in the `keys.json` format Google publishes.
        public var signingKeys: String
        /// Default `["MASTERCARD", "VISA"]`.
        public var allowedCardNetworks: [String]?
        /// Default `["CRYPTOGRAM_3DS"]`: device tokens only, which need no 3-D Secure step.
        public var allowedAuthMethods: [String]?
        /// Where the page loads `pay.js` from: an https URL or a path on this server (default Google's).
        public var scriptURL: String?

        public init(signingKeys: String) {
            self.signingKeys = signingKeys
        }
    }
}

extension ServerConfiguration {
    /// `merchants[].googlePay`, checked whole at startup, its gateway against the merchant's processor.
    static func resolveGooglePay(
        _ file: ConfigurationFile.GooglePay?, merchantDisplayName: String, processor: any ProcessorSettings, label: String,
        values: any ConfigurationReader
    ) throws(ConfigurationError) -> GooglePaySettings? {
        guard let file else { return nil }
        let section = "\(label).googlePay"
        guard let environment = GooglePaySettings.Environment(rawValue: file.environment ?? "TEST") else {
            throw ConfigurationError("\(section).environment must be TEST or PRODUCTION")
        }
        let merchantId = try file.merchantId.map { id throws(ConfigurationError) in
            guard (1...64).contains(id.utf8.count), id.utf8.allSatisfy({ (0x21...0x7E).contains($0) }) else {
                throw ConfigurationError("\(section).merchantId must be the ID the Google Pay & Wallet Console shows (1–64 characters)")
            }
            return id
        }
        if environment == .production && merchantId == nil {
            throw ConfigurationError("\(section).merchantId is needed in PRODUCTION: Google refuses a production request without it")
        }
        let name = file.merchantName ?? merchantDisplayName
        guard !name.trimmingCharacters(in: .whitespaces).isEmpty, name.count <= 64 else {
            throw ConfigurationError("\(section).merchantName must be 1–64 characters")
        }
        let networks = try checkedList(
            file.allowedCardNetworks ?? ["MASTERCARD", "VISA"], known: GooglePaySettings.cardNetworks,
            key: "\(section).allowedCardNetworks")
        let methods = try checkedList(
            file.allowedAuthMethods ?? ["CRYPTOGRAM_3DS"], known: GooglePaySettings.authMethods, key: "\(section).allowedAuthMethods")
        let keysBytes = try values.read(file.signingKeys, what: "\(section).signingKeys")
        let signingKeys: GooglePaySigningKeys
        do throws(GooglePayError) {
            signingKeys = try GooglePaySigningKeys.parse(keysBytes)
        } catch {
            throw ConfigurationError("\(values.describe(file.signingKeys)): \(section).signingKeys: \(error.message)")
        }
        let (mode, recipientId) = try googlePayMode(file, merchantId: merchantId, processor: processor, section: section, values: values)
        let script = file.scriptURL ?? GooglePaySettings.defaultScriptURL
        guard script.hasPrefix("https://") && URL(string: script)?.host != nil || script.hasPrefix("/") && !script.hasPrefix("//")
        else { throw ConfigurationError("\(section).scriptURL must be an https URL or a path on this server") }
        return GooglePaySettings(
            merchantId: merchantId, merchantName: name, environment: environment, mode: mode, allowedCardNetworks: networks,
            allowedAuthMethods: methods, signingKeys: signingKeys, recipientId: recipientId, scriptURL: script)
    }

    /// Gateway mode (`gateway` and `gatewayMerchantId`, as the processor knows itself) or direct
    /// mode (`directKeys`), never both; and the recipient ID its tokens are signed for.
    private static func googlePayMode(
        _ file: ConfigurationFile.GooglePay, merchantId: String?, processor: any ProcessorSettings, section: String,
        values: any ConfigurationReader
    ) throws(ConfigurationError) -> (GooglePaySettings.Mode, String) {
        switch (file.gateway, file.gatewayMerchantId, file.directKeys) {
        case (let gateway?, let gatewayMerchantId?, nil):
            guard file.recipientId == nil else {
                throw ConfigurationError("\(section).recipientId is for direct mode; a gateway's is gateway:<gateway>")
            }
            guard !gatewayMerchantId.isEmpty, gatewayMerchantId.utf8.count <= 128 else {
                throw ConfigurationError("\(section).gatewayMerchantId must be 1–128 characters, as the processor gave it")
            }
            if let problem = processor.googlePayGatewayProblem(gateway: gateway, gatewayMerchantId: gatewayMerchantId) {
                throw ConfigurationError("\(section): \(problem) (Google's OR_BIBED_06 in production)")
            }
            return (.gateway(name: gateway, merchantId: gatewayMerchantId), "gateway:\(gateway)")
        case (nil, nil, let files?):
            guard !files.isEmpty, files.count <= 4 else { throw ConfigurationError("\(section).directKeys must hold 1–4 keys") }
            var keys: [P256.KeyAgreement.PrivateKey] = []
            for (index, file) in files.enumerated() {
                let text = String(decoding: try values.read(file, what: "\(section).directKeys[\(index)]"), as: UTF8.self)
                guard let key = try? P256.KeyAgreement.PrivateKey(pemRepresentation: text) else {
                    throw ConfigurationError(
                        "\(values.describe(file)): \(section).directKeys[\(index)] must be a P-256 private key in PEM (openssl ecparam -name prime256v1 -genkey -noout)"
                    )
                }
                keys.append(key)
            }
            guard let recipient = file.recipientId ?? merchantId.map({ "merchant:\($0)" }) else {
                throw ConfigurationError("\(section): direct mode needs merchantId, which Google signs tokens for (merchant:<merchantId>)")
            }
            return (.direct(keys: keys), recipient)
        default:
            throw ConfigurationError(
                "\(section) needs either gateway and gatewayMerchantId (gateway mode, the processor decrypts) or directKeys (direct mode, Orchard decrypts), not both"
            )
        }
    }

    private static func checkedList(_ list: [String], known: [String], key: String) throws(ConfigurationError) -> [String] {
        guard !list.isEmpty, list.allSatisfy(known.contains), Set(list).count == list.count else {
            throw ConfigurationError("\(key) must list some of \(known.joined(separator: ", ")), each once")
        }
        return list
    }
}
