import CSQLite
import Foundation
import NIOPosix

/// A value bound to or read from SQLite.
enum SQLiteValue: Sendable, Equatable {
    case integer(Int64)
    case text(String)
    case blob([UInt8])
    case null

    var integer: Int64? { if case .integer(let v) = self { v } else { nil } }
    var text: String? { if case .text(let v) = self { v } else { nil } }
}

/// One SQLite connection, used by one thread at a time (a lock), off Swift's cooperative
/// pool (NIO's blocking-I/O thread pool).
final class SQLiteDatabase: @unchecked Sendable {
    struct Failure: Error, CustomStringConvertible {
        var code: Int32
        var message: String
        var description: String { "SQLite error \(code): \(message)" }
        /// A UNIQUE or PRIMARY KEY constraint failed.
        var isConstraint: Bool { code & 0xFF == SQLITE_CONSTRAINT }
    }

    private let handle: OpaquePointer
    private let lock = NSLock()

    init(path: String) throws {
        var db: OpaquePointer?
        let flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX
        guard sqlite3_open_v2(path, &db, flags, nil) == SQLITE_OK, let db else {
            let message = db.map { String(cString: sqlite3_errmsg($0)) } ?? "cannot open"
            sqlite3_close(db)
            throw Failure(code: SQLITE_CANTOPEN, message: "\(path): \(message)")
        }
        handle = db
        // Before anything touches the file: another connection closing (its WAL checkpoint) or
        // writing holds a lock for a moment, and without a timeout even the PRAGMAs fail with BUSY.
        sqlite3_busy_timeout(db, 5000)
        try execute("PRAGMA journal_mode = WAL")
        try execute("PRAGMA synchronous = FULL")  // a payment is on disk before the shopper is told
        try execute("PRAGMA foreign_keys = ON")
    }

    deinit {
        sqlite3_close_v2(handle)
    }

    /// Runs `body` on a thread-pool thread with the connection locked.
    @discardableResult
    func run<T: Sendable>(_ body: @escaping @Sendable (SQLiteDatabase) throws -> T) async throws -> T {
        try await NIOThreadPool.singleton.runIfActive {
            self.lock.lock()
            defer { self.lock.unlock() }
            return try body(self)
        }
    }

    /// Runs statements inside BEGIN IMMEDIATE … COMMIT, rolling back on any error.
    func transaction<T>(_ body: () throws -> T) throws -> T {
        try execute("BEGIN IMMEDIATE")
        do {
            let result = try body()
            try execute("COMMIT")
            return result
        } catch {
            _ = try? execute("ROLLBACK")
            throw error
        }
    }

    @discardableResult
    func execute(_ sql: String, _ parameters: [SQLiteValue] = []) throws -> Int {
        _ = try query(sql, parameters)
        return Int(sqlite3_changes(handle))
    }

    func query(_ sql: String, _ parameters: [SQLiteValue] = []) throws -> [[SQLiteValue]] {
        var statement: OpaquePointer?
        guard sqlite3_prepare_v2(handle, sql, -1, &statement, nil) == SQLITE_OK, let statement else {
            throw failure()
        }
        defer { sqlite3_finalize(statement) }
        let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)
        for (index, value) in parameters.enumerated() {
            let position = Int32(index + 1)
            let code: Int32
            switch value {
            case .integer(let v): code = sqlite3_bind_int64(statement, position, v)
            case .text(let v): code = sqlite3_bind_text(statement, position, v, -1, transient)
            case .blob(let v):
                code = v.withUnsafeBytes { sqlite3_bind_blob(statement, position, $0.baseAddress, Int32($0.count), transient) }
            case .null: code = sqlite3_bind_null(statement, position)
            }
            guard code == SQLITE_OK else { throw failure() }
        }
        var rows: [[SQLiteValue]] = []
        while true {
            let step = sqlite3_step(statement)
            if step == SQLITE_DONE { break }
            guard step == SQLITE_ROW else { throw failure() }
            rows.append(
                (0..<sqlite3_column_count(statement)).map { column in
                    switch sqlite3_column_type(statement, column) {
                    case SQLITE_INTEGER: .integer(sqlite3_column_int64(statement, column))
                    case SQLITE_TEXT: .text(String(cString: sqlite3_column_text(statement, column)))
                    case SQLITE_BLOB:
                        .blob(
                            Array(
                                UnsafeRawBufferPointer(
                                    start: sqlite3_column_blob(statement, column), count: Int(sqlite3_column_bytes(statement, column)))))
                    default: .null
                    }
                })
        }
        return rows
    }

    private func failure() -> Failure {
        Failure(code: sqlite3_extended_errcode(handle), message: String(cString: sqlite3_errmsg(handle)))
    }
}
