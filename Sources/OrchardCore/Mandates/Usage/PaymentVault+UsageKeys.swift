import Crypto
import Foundation

extension PaymentVault {
    /// Seals a merchant's usage key (its raw P-384 scalar) with AES-256-GCM under the vault key,
    /// authenticating the merchant and the key's ID: a sealed key copied to another merchant's or
    /// another key's row does not open there.
    public func sealUsageKey(_ key: P384.KeyAgreement.PrivateKey, merchantIdentifier: String, keyId: String) throws -> [UInt8] {
        guard
            let combined = try AES.GCM.seal(
                key.rawRepresentation, using: self.key, authenticating: Self.usageKeyData(merchantIdentifier, keyId)
            ).combined
        else { throw CoreError(.storage, "the usage key could not be sealed") }
        return Array(combined)
    }

    /// Opens what ``sealUsageKey(_:merchantIdentifier:keyId:)`` sealed for this merchant and key ID.
    public func openUsageKey(_ sealed: [UInt8], merchantIdentifier: String, keyId: String) throws -> P384.KeyAgreement.PrivateKey {
        let raw = try AES.GCM.open(
            try AES.GCM.SealedBox(combined: sealed), using: key, authenticating: Self.usageKeyData(merchantIdentifier, keyId))
        return try P384.KeyAgreement.PrivateKey(rawRepresentation: raw)
    }

    static func usageKeyData(_ merchantIdentifier: String, _ keyId: String) -> [UInt8] {
        Array("orchard usage key v1 \(keyId) of merchant \(merchantIdentifier)".utf8)
    }
}
