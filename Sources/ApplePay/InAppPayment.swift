import Foundation

/// A payment token from the shop's own iOS app: PassKit's `PKPaymentToken`, which the app sends
/// to the shop's backend as `{"token": {"paymentData": …, "paymentMethod": …, "transactionIdentifier": …}}`.
/// `paymentData` comes in the three encodings apps and SDKs use: the JSON object, its JSON text
/// in a string, or that text in base64 (`PKPaymentToken.paymentData` is `Data`, which
/// `JSONEncoder` writes as base64).
public enum InAppPayment {
    /// The `transactionIdentifier` the iOS Simulator gives its tokens, whose `paymentData` is empty.
    public static let simulatorTransactionIdentifier = "Simulated Identifier"

    /// The token in `body`, whichever encoding its `paymentData` is in.
    public static func token(from body: [UInt8]) throws(ApplePayError) -> PaymentToken {
        guard let object = try? JSONSerialization.jsonObject(with: Data(body)) as? [String: Any],
            let token = object["token"] as? [String: Any]
        else {
            throw ApplePayError(.malformedToken, "the body must be {\"token\": PKPaymentToken}, the token as the app got it")
        }
        let transaction = token["transactionIdentifier"] as? String
        let text = try paymentDataText(token["paymentData"])
        if transaction == simulatorTransactionIdentifier || text.isEmpty {
            throw ApplePayError(
                .simulatorToken,
                "this token comes from the iOS Simulator (empty paymentData, \"Simulated Identifier\"): Apple signs no payment there, so pay on a device, with a sandbox tester account to test"
            )
        }
        let paymentData: PaymentData
        do {
            paymentData = try JSONDecoder().decode(PaymentData.self, from: Data(text))
        } catch {
            throw ApplePayError(.malformedToken, "paymentData is not Apple's {version, data, signature, header}")
        }
        var method: PaymentToken.PaymentMethod?
        if let fields = token["paymentMethod"] {
            // An object only: JSONSerialization traps (it does not throw) on a top-level string or number.
            guard let fields = fields as? [String: Any], let json = try? JSONSerialization.data(withJSONObject: fields),
                let decoded = try? JSONDecoder().decode(PaymentToken.PaymentMethod.self, from: json)
            else { throw ApplePayError(.malformedToken, "paymentMethod is not {displayName, network, type}") }
            method = decoded
        }
        return PaymentToken(paymentData: paymentData, paymentMethod: method, transactionIdentifier: transaction)
    }

    /// `paymentData`'s JSON text: the object re-encoded, a string holding the text, or base64 of it.
    static func paymentDataText(_ value: Any?) throws(ApplePayError) -> [UInt8] {
        switch value {
        case let object as [String: Any]:
            guard !object.isEmpty else { return [] }
            guard let data = try? JSONSerialization.data(withJSONObject: object) else {
                throw ApplePayError(.malformedToken, "paymentData cannot be read")
            }
            return Array(data)
        case let string as String:
            let trimmed = string.trimmingCharacters(in: .whitespacesAndNewlines)
            if trimmed.isEmpty { return [] }
            if trimmed.hasPrefix("{") { return Array(trimmed.utf8) }
            guard let decoded = Data(base64Encoded: trimmed) else {
                throw ApplePayError(.malformedToken, "paymentData is neither JSON, nor JSON text, nor base64 of it")
            }
            return Array(decoded)
        default:
            throw ApplePayError(.malformedToken, "paymentData is missing: send the token's paymentData as the app got it")
        }
    }
}
