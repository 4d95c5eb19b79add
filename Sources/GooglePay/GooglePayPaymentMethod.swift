import Crypto
import Foundation

/// What `loadPaymentData` resolves with (Google's `PaymentData`), as far as a payment needs it:
/// `paymentMethodData`, whose `tokenizationData.token` is the ECv2 token as a JSON string. The
/// card description Google shows the shopper (`info.cardNetwork`, `info.cardDetails`) is kept for
/// the back office; it is not signed, so nothing is decided by it.
///
/// Decoded by type, field by field: a browser or app sends it, so a value of another JSON type
/// is a malformed payment, never a value handed to an API that traps.
public struct GooglePayPaymentMethod: Sendable, Equatable {
    /// The token string exactly as Google gave it: a gateway verifies its signatures over these bytes.
    public var token: String
    /// The parsed token (ECv2).
    public var parsed: GooglePayToken
    /// `info.cardNetwork`: `VISA`, `MASTERCARD`, … as Google shows it; nil when absent or not a network name.
    public var cardNetwork: String?
    /// `info.cardDetails`: the card's last four digits as Google shows them; nil when absent or not four digits.
    public var cardDetails: String?

    /// The claim key of this payment: SHA-256 of the signed message, in hex. Google signs each
    /// message for one payment, so a second use of the same token has the same key.
    public var claimKey: String {
        SHA256.hash(data: Array(parsed.signedMessage.utf8)).map { byte in
            let digits = Array("0123456789abcdef".utf8)
            return String(decoding: [digits[Int(byte >> 4)], digits[Int(byte & 0x0F)]], as: UTF8.self)
        }.joined()
    }

    public init(token: String, parsed: GooglePayToken, cardNetwork: String? = nil, cardDetails: String? = nil) {
        self.token = token
        self.parsed = parsed
        self.cardNetwork = cardNetwork
        self.cardDetails = cardDetails
    }

    /// `paymentMethodData` as decoded from a request body.
    public struct Wire: Decodable, Sendable {
        public var type: String?
        public var info: Info?
        public var tokenizationData: TokenizationData

        public struct Info: Decodable, Sendable {
            public var cardNetwork: String?
            public var cardDetails: String?
        }

        public struct TokenizationData: Decodable, Sendable {
            public var type: String?
            public var token: String
        }
    }

    /// A payment method from its decoded wire form: the token parsed (ECv2, at most
    /// ``GooglePayToken/maximumBytes``), the card description kept only when it looks like one.
    public static func parse(_ wire: Wire) throws(GooglePayError) -> GooglePayPaymentMethod {
        if let type = wire.type, type != "CARD" {
            throw GooglePayError(.malformedToken, "paymentMethodData.type must be CARD, the one Orchard takes")
        }
        if let type = wire.tokenizationData.type, !["PAYMENT_GATEWAY", "DIRECT"].contains(type) {
            throw GooglePayError(.malformedToken, "tokenizationData.type must be PAYMENT_GATEWAY or DIRECT")
        }
        let token = wire.tokenizationData.token
        let parsed = try GooglePayToken.parse(Array(token.utf8))
        let network = wire.info?.cardNetwork.flatMap { name in
            name.utf8.count <= 16 && !name.isEmpty && name.utf8.allSatisfy { (0x41...0x5A).contains($0) || $0 == 0x5F } ? name : nil
        }
        let details = wire.info?.cardDetails.flatMap { digits in
            digits.utf8.count == 4 && digits.utf8.allSatisfy { (0x30...0x39).contains($0) } ? digits : nil
        }
        return GooglePayPaymentMethod(token: token, parsed: parsed, cardNetwork: network, cardDetails: details)
    }
}
