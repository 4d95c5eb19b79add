import ApplePay
import Foundation

/// Identifiers of orders and payments: 128 random bits in hex, unguessable from one another.
public enum RecordIdentifier {
    /// The longest ID a caller's path or body may name: more than any Orchard makes (32 hex
    /// digits) or keeps from elsewhere, so a longer one is not looked up at all.
    public static let maximumLength = 64

    /// Whether `id` is short enough to look up (an ID from a path, a body or a client).
    public static func isLookup(_ id: String) -> Bool { id.utf8.count <= maximumLength }

    /// A new ID, never holding a run of 13 or more decimal digits: IDs are logged, and log
    /// scanners for card data (PCI DSS) flag such runs as card numbers; about 2 random IDs in a
    /// hundred would hold one. (The trace IDs of OrchardTracing follow the same rule.)
    public static func random() -> String {
        // Two 64-bit draws rather than sixteen one-byte ones: each draw is a getrandom(2) call,
        // and several identifiers are made for every payment.
        var generator = SystemRandomNumberGenerator()
        while true {
            let words: [UInt64] = [generator.next(), generator.next()]
            let id = Hex.encode(words.flatMap { word in (0..<8).map { UInt8(truncatingIfNeeded: word >> (8 * $0)) } })
            if !hasCardNumberShape(id) { return id }
        }
    }

    /// Whether `text` holds 13 or more decimal digits in a row.
    static func hasCardNumberShape(_ text: String) -> Bool {
        var run = 0
        for byte in text.utf8 {
            run = (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) ? run + 1 : 0
            if run >= 13 { return true }
        }
        return false
    }
}
