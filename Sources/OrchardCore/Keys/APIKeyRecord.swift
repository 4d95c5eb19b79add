import ApplePay
import Crypto
import Foundation

/// A merchant's secret API key as stored: its public ID and the SHA-256 of the secret, never the secret.
public struct APIKeyRecord: Sendable, Codable, Equatable {
    /// `key_` and 16 hex digits; the secret starts with it, so a lookup needs no scan.
    public var id: String
    public var merchantIdentifier: String
    public var secretHash: [UInt8]
    public var createdAt: Date
    public var revokedAt: Date?

    public init(id: String, merchantIdentifier: String, secretHash: [UInt8], createdAt: Date, revokedAt: Date? = nil) {
        self.id = id
        self.merchantIdentifier = merchantIdentifier
        self.secretHash = secretHash
        self.createdAt = createdAt
        self.revokedAt = revokedAt
    }

    /// Active keys a merchant may hold at once: one in use and its replacement.
    public static let maximumActive = 2

    /// Checks that a merchant holding `active` active keys may add `key`: the cap every store
    /// applies, counting under its lock.
    public static func checkCap(adding key: APIKeyRecord, active: Int) throws(CoreError) {
        guard active < maximumActive else {
            throw CoreError(.limitReached, "\(key.merchantIdentifier) already has \(active) active API keys: revoke one first")
        }
    }

    /// A new key and its secret (`osk_<id>_<43 base64url characters>`, 256 random bits), shown once.
    public static func generate(merchantIdentifier: String, at date: Date) -> (record: APIKeyRecord, secret: String) {
        // Redrawn, as record IDs are, when it would hold a card-number-shaped run of digits: IDs are logged.
        var id: String
        repeat {
            id = "key_" + Hex.encode((0..<8).map { _ in UInt8.random(in: 0...255) })
        } while RecordIdentifier.hasCardNumberShape(id)
        let random = Data((0..<32).map { _ in UInt8.random(in: 0...255) }).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
        let secret = "osk_\(id)_\(random)"
        return (APIKeyRecord(id: id, merchantIdentifier: merchantIdentifier, secretHash: hash(secret), createdAt: date), secret)
    }

    /// The key ID a presented secret names; nil for anything not shaped like a secret:
    /// `osk_key_`, 16 lowercase hex digits, `_`, 43 base64url characters.
    public static func keyId(ofSecret secret: String) -> String? {
        let parts = secret.utf8.split(separator: UInt8(ascii: "_"), maxSplits: 3, omittingEmptySubsequences: false)
        guard parts.count == 4, parts[0].elementsEqual("osk".utf8), parts[1].elementsEqual("key".utf8),
            parts[2].count == 16, parts[2].allSatisfy(isLowercaseHex), parts[3].count == 43, parts[3].allSatisfy(isBase64URL)
        else { return nil }
        return "key_" + String(decoding: parts[2], as: UTF8.self)
    }

    private static func isLowercaseHex(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains(byte)
    }

    private static func isBase64URL(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte) || (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte)
            || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || byte == UInt8(ascii: "-") || byte == UInt8(ascii: "_")
    }

    public static func hash(_ secret: String) -> [UInt8] {
        Array(SHA256.hash(data: Array(secret.utf8)))
    }

    /// Whether `secret` is this key's, compared in constant time.
    public func matches(_ secret: String) -> Bool {
        ConstantTime.equal(Self.hash(secret), secretHash) && revokedAt == nil
    }
}

/// Equality that takes the same time wherever the inputs differ.
public enum ConstantTime {
    public static func equal(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        guard a.count == b.count else { return false }
        var difference: UInt8 = 0
        for index in a.indices { difference |= a[index] ^ b[index] }
        return difference == 0
    }
}
