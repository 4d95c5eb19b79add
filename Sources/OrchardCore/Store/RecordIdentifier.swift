import ApplePay
import Foundation

/// Identifiers of orders and payments: 128 random bits in hex, unguessable from one another.
public enum RecordIdentifier {
    /// The longest ID a caller's path or body may name: more than any Orchard makes (32 hex
    /// digits) or keeps from elsewhere, so a longer one is not looked up at all.
    public static let maximumLength = 64

    /// Whether `id` is short enough to look up (an ID from a path, a body or a client).
    public static func isLookup(_ id: String) -> Bool { id.utf8.count <= maximumLength }

    public static func random() -> String {
        // Two 64-bit draws rather than sixteen one-byte ones: each draw is a getrandom(2) call,
        // and several identifiers are made for every payment.
        var generator = SystemRandomNumberGenerator()
        let words: [UInt64] = [generator.next(), generator.next()]
        return Hex.encode(words.flatMap { word in (0..<8).map { UInt8(truncatingIfNeeded: word >> (8 * $0)) } })
    }
}
