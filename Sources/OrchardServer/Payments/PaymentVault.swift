import ApplePay
import Crypto
import Foundation

/// What the engine needs to send a payment's reference again after a restart: the shopper's
/// token (still encrypted to the merchant's processing key) and the cardholder name.
struct RetryRequest: Codable, Sendable {
    var token: PaymentToken
    var cardholderName: String?
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

    /// Reads the 32-byte key at `path`, creating it (mode 0600, never overwritten) on first run.
    public static func load(path: String) throws(ConfigurationError) -> PaymentVault {
        if let data = FileManager.default.contents(atPath: path) {
            guard data.count == 32 else {
                throw ConfigurationError(
                    "\(path): the payment vault key must be 32 bytes; restore it from backup (unknown payments cannot be re-sent without it)"
                )
            }
            return PaymentVault(key: SymmetricKey(data: data))
        }
        let key = SymmetricKey(size: .bits256)
        let descriptor = open(path, O_WRONLY | O_CREAT | O_EXCL, 0o600)
        guard descriptor >= 0 else { throw ConfigurationError("\(path): cannot create the payment vault key (errno \(errno))") }
        defer { close(descriptor) }
        let written = key.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
        guard written == 32, fsync(descriptor) == 0 else {
            throw ConfigurationError("\(path): cannot write the payment vault key (errno \(errno))")
        }
        return PaymentVault(key: key)
    }

    /// A key given as 64 hex digits (`openssl rand -hex 32`), surrounding whitespace ignored.
    public static func parseKey(_ bytes: [UInt8], name: String) throws(ConfigurationError) -> PaymentVault {
        let text = String(decoding: bytes, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        guard text.utf8.count == 64, let key = Hex.decode(text), key.count == 32 else {
            throw ConfigurationError("\(name): payments.vaultKey must be 64 hex digits (try `openssl rand -hex 32`)")
        }
        return PaymentVault(key: SymmetricKey(data: key))
    }

    func seal(_ request: RetryRequest) throws -> [UInt8] {
        let plain = try JSONEncoder().encode(request)
        guard let combined = try AES.GCM.seal(plain, using: key).combined else {
            throw PaymentEngineError(.storage, "the retry request could not be sealed")
        }
        return Array(combined)
    }

    func unseal(_ sealed: [UInt8]) throws -> RetryRequest {
        let plain = try AES.GCM.open(try AES.GCM.SealedBox(combined: sealed), using: key)
        return try JSONDecoder().decode(RetryRequest.self, from: plain)
    }
}
