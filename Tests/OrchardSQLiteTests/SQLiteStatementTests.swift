import Foundation
import OrchardCore
import OrchardTesting
import Synchronization
import Testing

@testable import OrchardSQLite

/// Statements written with interpolated values: each value is a bound `?`, never SQL text.
@Suite("SQLite statements")
struct SQLiteStatementTests {
    enum Colour: String { case red, green }

    @Test("each interpolated value becomes one ? and its binding, in order; unescaped text and fragments are spliced")
    func interpolation() {
        let when = Date(timeIntervalSince1970: 1_700_000_000.9)
        let colour: Colour? = .green
        let clause: SQLiteStatement = "AND n = \(Int64(7)) AND flag = \(true)"
        let statement: SQLiteStatement = """
            SELECT \(unescaped: "a, b") FROM t WHERE id = \("x'; DROP TABLE t; --") AND at = \(when) \(clause) \
            AND colour = \(colour) AND gone = \(nil as String?) AND bytes = \([UInt8]([0, 1]))
            """
        #expect(
            statement.sql == "SELECT a, b FROM t WHERE id = ? AND at = ? AND n = ? AND flag = ? AND colour = ? AND gone = ? AND bytes = ?")
        #expect(
            statement.bindings == [
                .text("x'; DROP TABLE t; --"), .integer(1_700_000_000), .integer(7), .integer(1), .text("green"), .null, .blob([0, 1]),
            ])
    }

    @Test("values written through bindings read back by column name, NULL as nil")
    func roundTrip() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let database = try SQLiteDatabase(path: directory.path("statements.sqlite"))
        try database.execute("CREATE TABLE t (name TEXT, amount INTEGER, at INTEGER, payload BLOB, state TEXT, note TEXT)")
        let hostile = "o'brien\"); DROP TABLE t; --"
        let when = Date(timeIntervalSince1970: 1_234_567_890.75)
        try database.execute(
            """
            INSERT INTO t (name, amount, at, payload, state, note)
            VALUES (\(hostile), \(Int64.max), \(when), \([UInt8]([0, 255, 0])), \(PaymentState.settled), \(nil as String?))
            """)
        let row = try #require(try database.query("SELECT note, state, payload, at, amount, name FROM t WHERE name = \(hostile)").first)
        #expect(row.text("name") == hostile)
        #expect(row.integer("amount") == Int64.max)
        #expect(row.date("at") == Date(timeIntervalSince1970: 1_234_567_890), "times are kept as whole seconds")
        #expect(SQLiteStore.stored(when) == row.date("at"))
        #expect(row.blob("payload") == [0, 255, 0])
        #expect(row.value("state") == PaymentState.settled)
        #expect(row.optionalText("note") == nil)
        #expect(row.optionalDate("note") == nil)
        #expect(try database.query("SELECT COUNT(*) AS count FROM t").first?.int("count") == 1, "the table is still there")
    }

    @Test("the same statement with other values is prepared once: the cache is keyed on the SQL with its ?s")
    func cacheHits() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let database = try SQLiteDatabase(path: directory.path("cache.sqlite"))
        try database.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT)")
        let before = database.preparations.load(ordering: .relaxed)
        for index in 0..<50 {
            try database.execute("INSERT INTO t (id, name) VALUES (\(index), \("name \(index)" as String))")
        }
        #expect(database.preparations.load(ordering: .relaxed) == before + 1)
        let names = try (0..<50).map { index in try database.query("SELECT name FROM t WHERE id = \(index)").first?.text("name") }
        #expect(names == (0..<50).map { "name \($0)" })
        #expect(database.preparations.load(ordering: .relaxed) == before + 2)
    }
}
