import Foundation

/// A value bound to or read from SQLite.
enum SQLiteValue: Sendable, Equatable {
    case integer(Int64)
    case text(String)
    case blob([UInt8])
    case null
}

/// SQL with its values: `"… WHERE id = \(id)"` becomes `… WHERE id = ?` with `id` bound, so a
/// placeholder can never drift from its value. `nil` binds NULL, a `String`-backed enum its raw
/// value, `\(unescaped:)` splices SQL text (column lists), and a statement splices its SQL and values.
/// The SQL text (with its `?`s) is what the connection's statement cache is keyed on.
struct SQLiteStatement: ExpressibleByStringInterpolation, StringInterpolationProtocol, Sendable {
    private(set) var sql: String
    private(set) var bindings: [SQLiteValue] = []

    init(stringLiteral sql: String) { self.sql = sql }
    init(stringInterpolation: SQLiteStatement) { self = stringInterpolation }

    init(literalCapacity: Int, interpolationCount: Int) {
        sql = ""
        sql.reserveCapacity(literalCapacity + interpolationCount)
        bindings.reserveCapacity(interpolationCount)
    }

    mutating func appendLiteral(_ literal: String) { sql += literal }

    mutating func appendInterpolation(_ value: String?) { bind(value.map(SQLiteValue.text)) }
    mutating func appendInterpolation(_ value: Int64?) { bind(value.map(SQLiteValue.integer)) }
    mutating func appendInterpolation(_ value: Int?) { bind(value.map { .integer(Int64($0)) }) }
    mutating func appendInterpolation(_ value: Bool?) { bind(value.map { .integer($0 ? 1 : 0) }) }
    mutating func appendInterpolation(_ value: [UInt8]?) { bind(value.map(SQLiteValue.blob)) }
    /// The store keeps times as whole seconds since 1970 (`INTEGER` columns, compared in SQL).
    mutating func appendInterpolation(_ value: Date?) { bind(value.map { .integer(Int64($0.timeIntervalSince1970)) }) }

    mutating func appendInterpolation<T: RawRepresentable>(_ value: T?) where T.RawValue == String {
        appendInterpolation(value?.rawValue)
    }

    private mutating func bind(_ value: SQLiteValue?) {
        sql += "?"
        bindings.append(value ?? .null)
    }

    mutating func appendInterpolation(unescaped sql: String) { self.sql += sql }

    mutating func appendInterpolation(_ fragment: SQLiteStatement) {
        sql += fragment.sql
        bindings += fragment.bindings
    }
}

/// Column names to their positions, computed once per prepared statement and shared by its rows.
final class SQLiteColumns: Sendable {
    let positions: [String: Int]
    init(_ names: [String]) {
        positions = Dictionary(names.enumerated().map { ($1, $0) }) { first, _ in first }
    }
}

/// One result row, read by column name (through the statement's column map, no per-row dictionary).
/// A name the statement does not select is a programming error, and traps.
struct SQLiteRow: Sendable {
    let values: [SQLiteValue]
    let columns: SQLiteColumns

    subscript(_ name: String) -> SQLiteValue {
        guard let position = columns.positions[name] else { preconditionFailure("the statement selects no column \(name)") }
        return values[position]
    }

    func optionalText(_ name: String) -> String? { if case .text(let v) = self[name] { v } else { nil } }
    func optionalInteger(_ name: String) -> Int64? { if case .integer(let v) = self[name] { v } else { nil } }
    func optionalBlob(_ name: String) -> [UInt8]? { if case .blob(let v) = self[name] { v } else { nil } }
    func optionalDate(_ name: String) -> Date? { optionalInteger(name).map { Date(timeIntervalSince1970: TimeInterval($0)) } }
    /// NULL (never stored in the NOT NULL columns these read) reads as empty, zero or 1970.
    func text(_ name: String) -> String { optionalText(name) ?? "" }
    func integer(_ name: String) -> Int64 { optionalInteger(name) ?? 0 }
    func int(_ name: String) -> Int { Int(truncatingIfNeeded: integer(name)) }
    func blob(_ name: String) -> [UInt8] { optionalBlob(name) ?? [] }
    func date(_ name: String) -> Date { optionalDate(name) ?? Date(timeIntervalSince1970: 0) }
    /// A `String`-backed enum; nil when NULL or not one of its cases.
    func value<T: RawRepresentable>(_ name: String) -> T? where T.RawValue == String { optionalText(name).flatMap(T.init(rawValue:)) }
    /// A JSON text column decoded; nil when NULL or unreadable.
    func json<T: Decodable>(_ name: String, as type: T.Type) -> T? {
        optionalText(name).flatMap { try? JSONDecoder().decode(type, from: Data($0.utf8)) }
    }
}
