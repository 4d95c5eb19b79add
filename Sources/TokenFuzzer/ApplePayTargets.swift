import ApplePay
import Foundation
import OrchardCore

/// Any bytes as a token, parsed and verified against Apple's root, and the bytes alone as the
/// CMS signature, to reach the BER parser directly.
enum TokenTarget {
    static let verifier = TokenVerifier()
    static let signingTime = Date(timeIntervalSince1970: 1_630_523_000)  // the gala vector's signing time

    static func run(_ bytes: [UInt8]) {
        if let token = try? PaymentToken.parse(bytes) {
            _ = try? verifier.verify(token.paymentData, at: signingTime)
        }
        let raw = PaymentData(
            version: "EC_v1", data: Data(repeating: 1, count: 32).base64EncodedString(), signature: Data(bytes).base64EncodedString(),
            header: .init(ephemeralPublicKey: "AA==", publicKeyHash: "AA==", transactionId: "00"))
        _ = try? verifier.verify(raw, at: signingTime)
    }
}

/// The in-app authorization body, as the shop's backend relays it from its iOS app; a token it
/// accepts has its `paymentData` fields decoded as verification would.
enum InAppTarget {
    static func run(_ bytes: [UInt8]) {
        guard let token = try? InAppPayment.token(from: bytes) else { return }
        _ = try? token.paymentData.decoded()
    }
}

/// `paymentData` as JSONDecoder reads it (the browser's and the app's tokens both end there),
/// then its base64 and hex fields; and the bytes as the decrypted plaintext (the hand-written
/// fast reader, then JSONDecoder).
enum PaymentDataTarget {
    static func run(_ bytes: [UInt8]) {
        if let paymentData = try? JSONDecoder().decode(PaymentData.self, from: Data(bytes)) {
            _ = try? paymentData.decoded()
        }
        if let payment = try? DecryptedPayment(json: bytes) {
            _ = payment.lastFour
            _ = payment.expiryMMYY
        }
    }
}

/// Apple's merchant token event, as the gateway client reads it (at most 64 KiB, then its
/// fields); and the bytes as a notification's event ID and percent-encoded merchant segment,
/// which come from an unauthenticated URL.
enum TokenEventTarget {
    static func run(_ bytes: [UInt8]) {
        if bytes.count <= 64 * 1024, let event = try? JSONDecoder().decode(MerchantTokenEvent.self, from: Data(bytes)) {
            _ = MerchantTokenEvent.isValidIdentifier(event.merchantTokenIdentifier)
            _ = try? JSONEncoder().encode(event)
        }
        // A card update's encrypted metadata and its plaintext, as the lifecycle reads them.
        if let metadata = try? JSONDecoder().decode(EncryptedTokenMetadata.self, from: Data(bytes)) {
            _ = try? metadata.decoded()
        }
        _ = try? TokenMetadata(json: bytes, signingTime: Date(timeIntervalSince1970: 0))
        let text = String(decoding: bytes, as: UTF8.self)
        _ = MerchantTokenEvent.isValidIdentifier(text)
        _ = text.removingPercentEncoding
    }
}
