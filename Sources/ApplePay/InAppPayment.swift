import Foundation

/// A payment token from the shop's own iOS app: PassKit's `PKPaymentToken`, which the app sends
/// to the shop's backend as `{"token": {"paymentData": …, "paymentMethod": …, "transactionIdentifier": …}}`.
/// `paymentData` comes in the three encodings apps and SDKs use: the JSON object, its JSON text
/// in a string, or that text in base64 (`PKPaymentToken.paymentData` is `Data`, which
/// `JSONEncoder` writes as base64).
///
/// The body is decoded by type, field by field: any app user can send it through the shop, so a
/// value of another JSON type is a malformed token, never a value handed to an API that traps.
public enum InAppPayment {
    /// The `transactionIdentifier` the iOS Simulator gives its tokens, whose `paymentData` is empty.
    public static let simulatorTransactionIdentifier = "Simulated Identifier"

    /// The token in `body`, whichever encoding its `paymentData` is in.
    public static func token(from body: [UInt8]) throws(ApplePayError) -> PaymentToken {
        let fields: Fields
        do {
            fields = try JSONDecoder().decode(Envelope.self, from: Data(body)).token
        } catch let error as ApplePayError {
            throw error
        } catch {
            throw ApplePayError(.malformedToken, "the body must be {\"token\": PKPaymentToken}, the token as the app got it")
        }
        let paymentData: PaymentData
        switch fields.paymentData {
        case .decoded(let decoded) where fields.transactionIdentifier != simulatorTransactionIdentifier:
            paymentData = decoded
        case .text(let text) where fields.transactionIdentifier != simulatorTransactionIdentifier:
            paymentData = try decode(text)
        case .decoded, .text, .empty:
            throw ApplePayError(
                .simulatorToken,
                "this token comes from the iOS Simulator (empty paymentData, \"Simulated Identifier\"): Apple signs no payment there, so pay on a device, with a sandbox tester account to test"
            )
        }
        return PaymentToken(
            paymentData: paymentData, paymentMethod: fields.paymentMethod, transactionIdentifier: fields.transactionIdentifier)
    }

    private static func decode(_ text: [UInt8]) throws(ApplePayError) -> PaymentData {
        do {
            return try JSONDecoder().decode(PaymentData.self, from: Data(text))
        } catch {
            throw ApplePayError(.malformedToken, "paymentData is not Apple's {version, data, signature, header}")
        }
    }

    private struct Envelope: Decodable {
        var token: Fields
    }

    /// `PKPaymentToken`'s fields; each one of another type is named in the error.
    private struct Fields: Decodable {
        var paymentData: PaymentDataField
        var paymentMethod: PaymentToken.PaymentMethod?
        var transactionIdentifier: String?

        enum CodingKeys: String, CodingKey { case paymentData, paymentMethod, transactionIdentifier }

        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            guard container.contains(.paymentData), (try? container.decodeNil(forKey: .paymentData)) == false else {
                throw ApplePayError(.malformedToken, "paymentData is missing: send the token's paymentData as the app got it")
            }
            paymentData = try container.decode(PaymentDataField.self, forKey: .paymentData)
            do {
                // PassKit always fills it: an explicit null is not a token as the app got it.
                if try container.contains(.paymentMethod) && container.decodeNil(forKey: .paymentMethod) {
                    throw ApplePayError(.malformedToken, "paymentMethod is null")
                }
                paymentMethod = try container.decodeIfPresent(PaymentToken.PaymentMethod.self, forKey: .paymentMethod)
            } catch {
                throw ApplePayError(.malformedToken, "paymentMethod is not {displayName, network, type}, each a string")
            }
            do {
                transactionIdentifier = try container.decodeIfPresent(String.self, forKey: .transactionIdentifier)
            } catch {
                throw ApplePayError(.malformedToken, "transactionIdentifier is not a string")
            }
        }
    }

    /// `paymentData` as it came: Apple's object, an empty one (the Simulator's), or a string.
    enum PaymentDataField: Decodable {
        case decoded(PaymentData)
        case text([UInt8])
        case empty

        init(from decoder: any Decoder) throws {
            if let string = try? decoder.singleValueContainer().decode(String.self) {
                self = try Self.text(string)
            } else if let decoded = try? PaymentData(from: decoder) {
                self = .decoded(decoded)
            } else if let object = try? decoder.container(keyedBy: AnyKey.self), object.allKeys.isEmpty {
                self = .empty
            } else {
                throw ApplePayError(
                    .malformedToken, "paymentData is not Apple's {version, data, signature, header}, its JSON text, or base64 of it")
            }
        }

        /// A string holds the JSON text, or base64 of it; blank is the Simulator's empty token.
        private static func text(_ string: String) throws(ApplePayError) -> Self {
            let trimmed = string.trimmingCharacters(in: .whitespacesAndNewlines)
            if trimmed.isEmpty { return .empty }
            if trimmed.hasPrefix("{") { return .text(Array(trimmed.utf8)) }
            guard let decoded = Data(base64Encoded: trimmed) else {
                throw ApplePayError(.malformedToken, "paymentData is neither JSON, nor JSON text, nor base64 of it")
            }
            return decoded.isEmpty ? .empty : .text(Array(decoded))
        }
    }

    private struct AnyKey: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init?(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }
}
