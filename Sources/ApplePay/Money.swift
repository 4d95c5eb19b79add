/// An ISO 4217 currency with its minor-unit exponent.
public struct Currency: Sendable, Hashable, Codable {
    public var code: String
    /// The numeric code Apple puts in decrypted tokens (`currencyCode`, e.g. "978").
    public var numericCode: String
    /// Digits after the decimal point: JPY 0, EUR 2, BHD 3.
    public var exponent: Int

    static let known: [String: Currency] = {
        let table: [(String, String, Int)] = [
            ("AED", "784", 2), ("AUD", "036", 2), ("BHD", "048", 3), ("BRL", "986", 2), ("CAD", "124", 2), ("CHF", "756", 2),
            ("CNY", "156", 2), ("CZK", "203", 2), ("DKK", "208", 2), ("EUR", "978", 2), ("GBP", "826", 2), ("HKD", "344", 2),
            ("HUF", "348", 2), ("ILS", "376", 2), ("INR", "356", 2), ("JOD", "400", 3), ("JPY", "392", 0), ("KRW", "410", 0),
            ("KWD", "414", 3), ("MXN", "484", 2), ("NOK", "578", 2), ("NZD", "554", 2), ("OMR", "512", 3), ("PLN", "985", 2),
            ("QAR", "634", 2), ("SAR", "682", 2), ("SEK", "752", 2), ("SGD", "702", 2), ("TWD", "901", 2), ("USD", "840", 2),
            ("ZAR", "710", 2),
        ]
        return Dictionary(uniqueKeysWithValues: table.map { ($0.0, Currency(code: $0.0, numericCode: $0.1, exponent: $0.2)) })
    }()

    /// Every currency Orchard takes, by code.
    public static var all: [Currency] { known.values.sorted { $0.code < $1.code } }

    /// A currency by its alphabetic code; nil when Orchard does not know its exponent.
    public init?(code: String) {
        guard let currency = Self.known[code.uppercased()] else { return nil }
        self = currency
    }

    init(code: String, numericCode: String, exponent: Int) {
        self.code = code
        self.numericCode = numericCode
        self.exponent = exponent
    }
}

/// An amount in integer minor units: never a binary float.
public struct Money: Sendable, Hashable, Codable {
    public var minorUnits: Int64
    public var currency: Currency

    public init(minorUnits: Int64, currency: Currency) {
        self.minorUnits = minorUnits
        self.currency = currency
    }

    /// The decimal string Apple Pay JS expects ("12.34", "1200" for JPY, "1.250" for BHD).
    public var decimalString: String {
        let negative = minorUnits < 0
        let digits = String(minorUnits.magnitude)
        guard currency.exponent > 0 else { return (negative ? "-" : "") + digits }
        let padded = String(repeating: "0", count: max(0, currency.exponent + 1 - digits.count)) + digits
        let split = padded.index(padded.endIndex, offsetBy: -currency.exponent)
        return (negative ? "-" : "") + padded[..<split] + "." + padded[split...]
    }

    /// Parses a decimal string with exactly the currency's exponent ("12.34" for EUR,
    /// "1200" for JPY) into minor units; nil for anything else (no floats, signs or spaces).
    public static func minorUnits(_ text: String, currency: Currency) -> Int64? {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        let whole = parts[0]
        let fraction = parts.count == 2 ? parts[1] : ""
        guard parts.count == (currency.exponent > 0 ? 2 : 1), fraction.utf8.count == currency.exponent,
            (1...15).contains(whole.utf8.count),
            (whole + fraction).utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 })
        else { return nil }
        return Int64(whole + fraction)
    }

}

/// The bounds every amount Orchard takes from outside (a shop, a quote, a catalogue, an
/// agreement, a token) is held to, checked without arithmetic that can trap.
extension Money {
    /// The largest amount accepted, in minor units: far above any card limit, and small enough that
    /// a few thousand of them cannot reach `Int64.max`.
    public static let maximumMinorUnits: Int64 = 99_999_999_999

    /// Whether `minorUnits` is a chargeable amount: 1 to ``maximumMinorUnits``.
    public static func isPositiveAmount(_ minorUnits: Int64) -> Bool {
        (1...maximumMinorUnits).contains(minorUnits)
    }

    /// Whether `minorUnits` lies within ±``maximumMinorUnits`` (a line or a discount may be
    /// negative). A range test, not `abs`, which traps on `Int64.min`.
    public static func isBoundedAmount(_ minorUnits: Int64) -> Bool {
        (-maximumMinorUnits...maximumMinorUnits).contains(minorUnits)
    }

    /// The sum of `amounts`, or nil when it would leave `Int64`'s range: the caller refuses
    /// instead of trapping.
    public static func sum<S: Sequence<Int64>>(_ amounts: S) -> Int64? {
        var total: Int64 = 0
        for amount in amounts {
            let (next, overflow) = total.addingReportingOverflow(amount)
            guard !overflow else { return nil }
            total = next
        }
        return total
    }
}
