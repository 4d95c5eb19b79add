import Crypto
import Foundation
import GooglePay

/// Google Pay's inputs: the bytes as the `paymentMethodData` a page or app posts (its token
/// parsed and verified for a recipient), as a token alone, as a `keys.json`, and as a decrypted
/// message. The root is made once per process: nothing verifies, but every step before the
/// signature check runs on what the fuzzer writes.
enum GooglePayTarget {
    static let roots = GooglePaySigningKeys(keys: [
        .init(publicKey: P256.Signing.PrivateKey().publicKey, expiration: Date(timeIntervalSince1970: 4_102_444_800))
    ])
    static let now = Date(timeIntervalSince1970: 1_800_000_000)

    static func run(_ bytes: [UInt8]) {
        if let wire = try? JSONDecoder().decode(GooglePayPaymentMethod.Wire.self, from: Data(bytes)),
            let method = try? GooglePayPaymentMethod.parse(wire)
        {
            _ = method.claimKey
            _ = try? ECv2.verify(method.parsed, recipientId: "gateway:fuzz", roots: roots, at: now)
        }
        if let token = try? GooglePayToken.parse(bytes) {
            _ = try? ECv2.verify(token, recipientId: "merchant:fuzz", roots: roots, at: now)
        }
        _ = try? GooglePaySigningKeys.parse(bytes)
        if let data = try? ECv2.paymentData(bytes) { _ = data.description }
    }
}
