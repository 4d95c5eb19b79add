import ApplePay
import Crypto
import Foundation

/// What the engine needs to send a payment's reference again after a restart: the shopper's
/// token (still encrypted, to the merchant's processing key or Google's recipient) and the
/// cardholder name.
struct RetryRequest: Codable, Sendable {
    /// The shopper's Apple Pay token; nil for Google Pay and for a mandate charge, which re-sends from the mandate.
    var token: PaymentToken?
    /// The shopper's Google Pay token, exactly as Google gave it.
    var googlePayToken: String?
    var cardholderName: String?
    /// The mandate a merchant-initiated charge is of.
    var mandateId: String?
}

/// Seals retry requests with AES-256-GCM under a key kept apart from the database, so a copy of
/// the database alone holds no usable token. A sealed request lives only while its payment is
/// pending or unknown; the store deletes it when the outcome is known.
public struct PaymentVault: Sendable {
    let key: SymmetricKey

    public init(key: SymmetricKey) {
        self.key = key
    }

    /// A vault with a random key that lives as long as the process (tests, and stores that never restart).
    public static func ephemeral() -> PaymentVault {
        PaymentVault(key: SymmetricKey(size: .bits256))
    }

    /// A key given as 64 hex digits (`openssl rand -hex 32`), surrounding whitespace ignored.
    public static func parseKey(_ bytes: [UInt8], name: String) throws(ConfigurationError) -> PaymentVault {
        PaymentVault(key: try parseHexKey(bytes, name: name, setting: "payments.vaultKey"))
    }

    /// A 256-bit key written as 64 hex digits; the message names the `setting` and the source.
    public static func parseHexKey(_ bytes: [UInt8], name: String, setting: String) throws(ConfigurationError) -> SymmetricKey {
        let text = String(decoding: bytes, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        guard text.utf8.count == 64, let key = Hex.decode(text), key.count == 32 else {
            throw ConfigurationError("\(name): \(setting) must be 64 hex digits (try `openssl rand -hex 32`)")
        }
        return SymmetricKey(data: key)
    }

    /// The first byte of a request sealed for its payment (``seal(_:for:)``).
    static let boundFormat: UInt8 = 2

    /// Seals `request` for the payment `paymentId` will re-send: the payment ID is authenticated
    /// with it, so a sealed request moved to another payment's row (by whoever can write the
    /// database) does not open there.
    func seal(_ request: RetryRequest, for paymentId: String) throws -> [UInt8] {
        let plain = try JSONEncoder().encode(request)
        guard let combined = try AES.GCM.seal(plain, using: key, authenticating: Self.associatedData(paymentId)).combined else {
            throw CoreError(.storage, "the retry request could not be sealed")
        }
        return [Self.boundFormat] + Array(combined)
    }

    /// Opens the request sealed for `paymentId`. A request sealed before requests were bound to
    /// their payment (no format byte; a payment left unknown across the upgrade) still opens: a
    /// bound one never opens that way, its first byte being part of no nonce it was sealed with.
    func unseal(_ sealed: [UInt8], for paymentId: String) throws -> RetryRequest {
        if sealed.first == Self.boundFormat,
            let plain = try? AES.GCM.open(
                try AES.GCM.SealedBox(combined: sealed.dropFirst()), using: key, authenticating: Self.associatedData(paymentId))
        {
            return try JSONDecoder().decode(RetryRequest.self, from: plain)
        }
        let plain = try AES.GCM.open(try AES.GCM.SealedBox(combined: sealed), using: key)
        return try JSONDecoder().decode(RetryRequest.self, from: plain)
    }

    static func associatedData(_ paymentId: String) -> [UInt8] {
        Array("orchard retry request v2 for payment \(paymentId)".utf8)
    }

    /// The browser's capability for a payment request: its ID and a MAC of it under a key
    /// derived from the vault key, so the same request always has the same secret and none is stored.
    public func clientSecret(forRequest id: String) -> String {
        "\(id)_secret_\(Hex.encode(clientSecretMAC(id)))"
    }

    /// The request a client secret opens, checked in constant time; nil for anything else.
    public func requestId(fromClientSecret secret: String) -> String? {
        guard secret.utf8.count <= 160, let range = secret.range(of: "_secret_") else { return nil }
        let id = String(secret[..<range.lowerBound])
        guard let mac = Hex.decode(String(secret[range.upperBound...])) else { return nil }
        return ConstantTime.equal(mac, clientSecretMAC(id)) ? id : nil
    }

    private func clientSecretMAC(_ id: String) -> [UInt8] {
        let derived = HMAC<SHA256>.authenticationCode(for: Array("orchard client secret v1".utf8), using: key)
        let mac = HMAC<SHA256>.authenticationCode(for: Array(id.utf8), using: SymmetricKey(data: Data(derived)))
        return Array(Array(mac).prefix(20))
    }
}
