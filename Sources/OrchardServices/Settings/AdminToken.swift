import Crypto
import Foundation
import OrchardCore

/// The admin API's bearer token. Compared in constant time; never printed.
public struct AdminToken: Sendable, CustomStringConvertible {
    public static let minimumLength = 32
    let digest: [UInt8]

    public init(_ token: String) { digest = Array(SHA256.hash(data: Array(token.utf8))) }

    /// Compares SHA-256 digests without an early exit, so neither the length nor the first
    /// differing byte of the presented token shows in the timing.
    public func matches(_ presented: [UInt8]) -> Bool {
        ConstantTime.equal(Array(SHA256.hash(data: presented)), digest)
    }

    public var description: String { "AdminToken(redacted)" }
}
