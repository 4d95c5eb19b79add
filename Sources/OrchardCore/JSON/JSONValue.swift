import Foundation

/// Any JSON value, decoded by type: what Orchard reads an outside party's JSON answer into
/// before it checks it field by field, and writes a request body as.
///
/// Decoding never traps: a number is an ``integer(_:)`` when it fits `Int64` exactly and a
/// ``number(_:)`` otherwise; a number no `Double` holds (`1e400`), invalid UTF-8, a lone
/// surrogate or nesting past the decoder's depth limit make the whole decode throw, which the
/// caller treats as an unreadable answer. The accessors return nil for a value of another type,
/// so a field that changed type reads as a missing one.
public enum JSONValue: Sendable, Hashable {
    case string(String)
    /// A number written without a fraction or exponent that fits `Int64` (also `1.0`, `1e2`).
    case integer(Int64)
    /// Any other finite number.
    case number(Double)
    case bool(Bool)
    case null
    case array([JSONValue])
    case object([String: JSONValue])

    /// The value of the JSON text in `bytes`; nil for anything that is not one JSON value.
    public static func decode(_ bytes: [UInt8]) -> JSONValue? {
        try? JSONDecoder().decode(JSONValue.self, from: Data(bytes))
    }

    /// The JSON text, keys sorted (by their UTF-8 bytes) and `/` unescaped, so that equal values
    /// always give the same bytes (a body that is signed or compared by a test stays stable).
    public func encoded() throws -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return Array(try encoder.encode(self))
    }

    /// The string, or nil for any other type.
    public var string: String? {
        if case .string(let value) = self { return value }
        return nil
    }

    /// A boolean, never a number read as one.
    public var bool: Bool? {
        if case .bool(let value) = self { return value }
        return nil
    }

    /// An integer: an ``integer(_:)``, or a ``number(_:)`` with no fraction inside `Int64`'s range
    /// (converted with `Int64(exactly:)`, so NaN, infinities and huge values give nil, never a trap).
    public var int64: Int64? {
        switch self {
        case .integer(let value): value
        case .number(let value): Int64(exactly: value)
        default: nil
        }
    }

    /// Any number as a `Double` (an integer past 2^53 rounded).
    public var double: Double? {
        switch self {
        case .integer(let value): Double(value)
        case .number(let value): value
        default: nil
        }
    }

    public var array: [JSONValue]? {
        if case .array(let value) = self { return value }
        return nil
    }

    public var object: [String: JSONValue]? {
        if case .object(let value) = self { return value }
        return nil
    }

    public var isNull: Bool { self == .null }

    /// The element at `index` of an array; nil out of range or for a value that is not an array.
    public subscript(index: Int) -> JSONValue? {
        guard let array, array.indices.contains(index) else { return nil }
        return array[index]
    }
}

extension JSONValue: Codable {
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let value = try? container.decode(Bool.self) {
            // Before the numbers: the decoder reads only `true` and `false` as a Bool.
            self = .bool(value)
        } else if let value = try? container.decode(Int64.self) {
            self = .integer(value)
        } else if let value = try? container.decode(Double.self) {
            self = .number(value)
        } else if let value = try? container.decode(String.self) {
            self = .string(value)
        } else if let value = try? container.decode([JSONValue].self) {
            self = .array(value)
        } else {
            self = .object(try container.decode([String: JSONValue].self))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .string(let value): try container.encode(value)
        case .integer(let value): try container.encode(value)
        // A non-finite Double throws here (JSON has no NaN or infinity): an error, not a trap.
        case .number(let value): try container.encode(value)
        case .bool(let value): try container.encode(value)
        case .null: try container.encodeNil()
        case .array(let value): try container.encode(value)
        case .object(let value): try container.encode(value)
        }
    }
}

/// Literals, so that a request body reads as the JSON it becomes. Not `nil`: it would make
/// `JSONValue?` ambiguous (a missing member or JSON null); JSON null is spelt ``null``.
extension JSONValue: ExpressibleByStringLiteral, ExpressibleByIntegerLiteral, ExpressibleByBooleanLiteral,
    ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral
{
    public init(stringLiteral value: String) { self = .string(value) }
    public init(integerLiteral value: Int64) { self = .integer(value) }
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    public init(arrayLiteral elements: JSONValue...) { self = .array(elements) }

    /// A repeated key keeps its last value (as JSON parsers do) rather than trap as
    /// `Dictionary(uniqueKeysWithValues:)` would.
    public init(dictionaryLiteral elements: (String, JSONValue)...) {
        self = .object(Dictionary(elements, uniquingKeysWith: { _, last in last }))
    }
}

extension JSONValue {
    /// The member `key` of an object: nil for a missing key or a value that is not an object.
    /// Setting nil removes the key; setting on a value that is not an object does nothing.
    public subscript(key: String) -> JSONValue? {
        get { object?[key] }
        set {
            guard case .object(var members) = self else { return }
            members[key] = newValue
            self = .object(members)
        }
    }
}
