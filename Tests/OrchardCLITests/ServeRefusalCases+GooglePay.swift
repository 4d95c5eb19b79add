import Crypto
import Foundation
import OrchardTesting

extension RefusalBench {
    /// A test root's `keys.json`, a direct-mode key and a file that is not `keys.json`.
    func writeGooglePayFiles() throws {
        try write("google-pay-keys.json", String(decoding: GooglePayMinter().rootKeysJSON, as: UTF8.self))
        try write("google-pay-direct.key", P256.KeyAgreement.PrivateKey().pemRepresentation + "\n")
        try write("google-pay-not-keys.json", "{\"keys\": []}\n")
    }
}

extension RefusalCase {
    /// The demo merchant's `googlePay` in gateway mode for its Worldpay processor, valid, then changed.
    static func googlePay(_ name: String, _ change: @escaping @Sendable (inout [String: Any]) -> Void) -> RefusalCase {
        .edit(name) { json, _ in
            var section: [String: Any] = [
                "gateway": "worldpay", "gatewayMerchantId": "orchard-demo", "signingKeys": "google-pay-keys.json",
            ]
            change(&section)
            json.merchant["googlePay"] = section
        }
    }

    static let googlePayCases: [RefusalCase] = [
        googlePay("googlePay.environment LIVE") { $0["environment"] = "LIVE" },
        googlePay("googlePay.merchantId with a space") { $0["merchantId"] = "BCR2 DN4T" },
        googlePay("googlePay in PRODUCTION without merchantId") { $0["environment"] = "PRODUCTION" },
        googlePay("googlePay.merchantName empty") { $0["merchantName"] = " " },
        googlePay("googlePay.allowedCardNetworks naming MAESTRO") { $0["allowedCardNetworks"] = ["VISA", "MAESTRO"] },
        googlePay("googlePay.signingKeys without a key") { $0["signingKeys"] = "google-pay-not-keys.json" },
        googlePay("googlePay.scriptURL over http") { $0["scriptURL"] = "http://pay.google.com/gp/p/js/pay.js" },
        googlePay("googlePay.recipientId in gateway mode") { $0["recipientId"] = "merchant:123" },
        googlePay("googlePay.gatewayMerchantId empty") { $0["gatewayMerchantId"] = "" },
        googlePay("googlePay.gateway not Worldpay's (OR_BIBED_06)") { $0["gateway"] = "stripe" },
        .edit("googlePay.gatewayMerchantId not Worldline's PSPID", environment: ["WORLDLINE_SECRET": "secret"]) { json, _ in
            json.merchant["processor"] = [
                "type": "worldline", "merchantId": "PSPID", "apiKeyId": "key", "secretApiKey": "env:WORLDLINE_SECRET",
            ]
            json.merchant["googlePay"] = [
                "gateway": "worldlinedirect", "gatewayMerchantId": "another", "signingKeys": "google-pay-keys.json",
            ]
        },
        googlePay("googlePay with both modes") { $0["directKeys"] = ["google-pay-direct.key"] },
        googlePay("googlePay.directKeys empty") {
            $0["gateway"] = nil
            $0["gatewayMerchantId"] = nil
            $0["directKeys"] = [String]()
            $0["merchantId"] = "12345678901234567890"
        },
        googlePay("googlePay.directKeys naming a keys.json") {
            $0["gateway"] = nil
            $0["gatewayMerchantId"] = nil
            $0["directKeys"] = ["google-pay-keys.json"]
            $0["merchantId"] = "12345678901234567890"
        },
        googlePay("googlePay direct mode without merchantId") {
            $0["gateway"] = nil
            $0["gatewayMerchantId"] = nil
            $0["directKeys"] = ["google-pay-direct.key"]
        },
    ]
}
