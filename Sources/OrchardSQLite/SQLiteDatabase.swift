import CSQLite
import Foundation
import NIOPosix
import OrchardCore
import Synchronization

/// One SQLite connection. The store's own connection is the writer: every `run` is a member of
/// a group commit (see below); `read` borrows one of a few read-only connections, which in WAL
/// mode see the last commit and never wait for the writer.
///
/// Group commit: callers' transactions queue; one writer thread takes all that are waiting, runs
/// them in one `BEGIN IMMEDIATE … COMMIT`, each inside its own SAVEPOINT, and answers each
/// caller only after that COMMIT returned, so after the fsync that covers its write
/// (`synchronous = FULL`). A member that throws rolls back to its savepoint: its writes vanish,
/// the others' stay, and it gets its own error. One fsync then serves many transactions.
final class SQLiteDatabase: @unchecked Sendable {
    struct Failure: Error, CustomStringConvertible {
        var code: Int32
        var message: String
        var description: String { "SQLite error \(code): \(message)" }
        /// A UNIQUE or PRIMARY KEY constraint failed.
        var isConstraint: Bool { code & 0xFF == SQLITE_CONSTRAINT }
        /// The file cannot be written or read now (a full disk, a read-only or vanished file, an
        /// I/O error, a lock held past the busy timeout): the same transaction may succeed later.
        var isUnavailable: Bool {
            [SQLITE_FULL, SQLITE_READONLY, SQLITE_IOERR, SQLITE_CANTOPEN, SQLITE_BUSY, SQLITE_NOMEM].contains(code & 0xFF)
        }
    }

    /// `error`, or the ``StoreError`` a caller acts on when it says the file is unavailable. On a
    /// read connection, which is query-only by design, SQLITE_READONLY is a bug, not the file.
    static func classified(_ error: any Error, reading: Bool = false) -> any Error {
        guard let failure = error as? Failure, failure.isUnavailable else { return error }
        if reading && failure.code & 0xFF == SQLITE_READONLY { return error }
        return StoreError(code: .unavailable, message: "the SQLite database cannot be written: \(failure.message)")
    }

    /// The most transactions one COMMIT covers: bounds how long a batch holds the write lock.
    static let maximumBatch = 128
    /// Idle read connections kept open.
    static let maximumIdleReaders = 4

    private let handle: OpaquePointer
    let path: String
    /// The writer's own thread: a batch waits on its fsync there, never on Swift's cooperative
    /// pool or on the pool that serves reads. Nil on read connections.
    private let writerThread: NIOThreadPool?
    /// Only the writer has these: transactions waiting for the next batch, and whether a batch runs.
    private let queue = Mutex<(pending: [GroupCommitMember], draining: Bool)>(([], false))
    private let readers = Mutex<[SQLiteDatabase]>([])
    /// Prepared statements, with their column maps, by their SQL (`?` for each value): the store
    /// runs the same few dozen over and over, and parsing each anew was much of the writer's time.
    /// Touched only by the thread that holds this connection (the writer thread, or one `read` at a time).
    private var statements: [String: (statement: OpaquePointer, columns: SQLiteColumns)] = [:]
    /// The writer's WAL checkpoints, off its thread (set once, in `init`; nil on read connections).
    private(set) var checkpointer: SQLiteCheckpointer?
    static let maximumCachedStatements = 128
    /// Statements prepared (cache misses), for tests: the same SQL with other values must not prepare again.
    let preparations = Atomic<Int>(0)
    /// Virtual-machine steps of every statement run on this connection, for tests: how much a
    /// query reads, counted, where a timing would only be noise.
    let steps = Atomic<Int>(0)
    /// Completed batches, for tests: a member's answer always comes after a COMMIT later than its body.
    let committedBatches = Atomic<Int>(0)
    /// Transactions waiting for the writer, for tests.
    var pendingWrites: Int { queue.withLock { $0.pending.count } }
    /// True from a batch that failed because the file could not be written until the readiness
    /// check's own write, which needs new pages, goes through: a small write that still fits in
    /// the file's free pages says nothing about a full disk.
    let writesFailing = Atomic<Bool>(false)

    init(path: String, readOnly: Bool = false) throws {
        let db = try Self.open(path, flags: SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX)
        handle = db
        self.path = path
        writerThread = readOnly ? nil : NIOThreadPool(numberOfThreads: 1)
        writerThread?.start()
        try execute("PRAGMA journal_mode = WAL")
        try execute("PRAGMA synchronous = FULL")  // a payment is on disk before the shopper is told
        try execute("PRAGMA foreign_keys = ON")
        // A read connection that tried to write would bypass the group commit: make it fail instead.
        if readOnly {
            try execute("PRAGMA query_only = ON")
        } else {
            let checkpointer = try SQLiteCheckpointer(path: path)
            checkpointer.attach(to: db)
            self.checkpointer = checkpointer
        }
    }

    /// A connection to `path`, with the busy timeout every connection here needs: before anything
    /// touches the file, another connection closing (its WAL checkpoint) or writing holds a lock
    /// for a moment, and without a timeout even the PRAGMAs fail with BUSY.
    static func open(_ path: String, flags: Int32) throws(Failure) -> OpaquePointer {
        var db: OpaquePointer?
        guard sqlite3_open_v2(path, &db, flags, nil) == SQLITE_OK, let db else {
            let message = db.map { String(cString: sqlite3_errmsg($0)) } ?? "cannot open"
            sqlite3_close(db)
            throw Failure(code: SQLITE_CANTOPEN, message: "\(path): \(message)")
        }
        sqlite3_busy_timeout(db, 5000)
        return db
    }

    deinit {
        // A running batch holds `self`: when this runs, the writer thread is idle.
        writerThread?.shutdownGracefully { _ in }
        for prepared in statements.values { sqlite3_finalize(prepared.statement) }
        sqlite3_close_v2(handle)
    }

    /// Runs `body` as one transaction of the next group commit, on the writer thread; returns
    /// (or throws) once the COMMIT covering it returned. Anything that writes goes through here.
    /// `body` is all or nothing: when it throws, every write it made rolls back (its savepoint).
    @discardableResult
    func run<T: Sendable>(_ body: @escaping @Sendable (SQLiteDatabase) throws -> T) async throws -> T {
        guard let writerThread else { preconditionFailure("a read connection never runs transactions") }
        do {
            return try await enqueue(body, on: writerThread)
        } catch {
            throw Self.classified(error)
        }
    }

    private func enqueue<T: Sendable>(_ body: @escaping @Sendable (SQLiteDatabase) throws -> T, on writerThread: NIOThreadPool)
        async throws -> T
    {
        try await withCheckedThrowingContinuation { continuation in
            let member = GroupCommitMember(body: body, continuation: continuation)
            let startsWriter = queue.withLock { queue in
                queue.pending.append(member)
                defer { queue.draining = true }
                return !queue.draining
            }
            if startsWriter { writerThread.submit { _ in self.drain() } }
        }
    }

    /// Runs read-only `body` on a read connection, inside one read transaction (one consistent
    /// snapshot of the last commit), off Swift's cooperative pool.
    func read<T: Sendable>(_ body: @escaping @Sendable (SQLiteDatabase) throws -> T) async throws -> T {
        do {
            return try await readConnection(body)
        } catch {
            throw Self.classified(error, reading: true)
        }
    }

    private func readConnection<T: Sendable>(_ body: @escaping @Sendable (SQLiteDatabase) throws -> T) async throws -> T {
        try await NIOThreadPool.singleton.runIfActive {
            let reader = try self.readers.withLock { $0.popLast() } ?? SQLiteDatabase(path: self.path, readOnly: true)
            defer {
                self.readers.withLock { idle in
                    if idle.count < Self.maximumIdleReaders { idle.append(reader) }
                }
            }
            try reader.execute("BEGIN")
            defer { _ = try? reader.execute("COMMIT") }
            return try body(reader)
        }
    }

    /// Runs batches until no transaction waits.
    private func drain() {
        while true {
            checkpointer?.finish(on: handle)
            let batch = queue.withLock { queue -> [GroupCommitMember] in
                let batch = Array(queue.pending.prefix(Self.maximumBatch))
                queue.pending.removeFirst(batch.count)
                if batch.isEmpty { queue.draining = false }
                return batch
            }
            if batch.isEmpty { return }
            commit(batch)
        }
    }

    /// One transaction for the batch, a savepoint per member, one COMMIT; then every answer.
    private func commit(_ batch: [GroupCommitMember]) {
        do {
            try execute("BEGIN IMMEDIATE")
        } catch {
            if (error as? Failure)?.isUnavailable == true { writesFailing.store(true, ordering: .releasing) }
            for member in batch { member.finish(committed: .failure(error)) }
            return
        }
        var outcome: Result<Void, any Error> = .success(())
        for member in batch {
            member.perform(in: self)
            // I/O errors, a full disk or no memory can end the whole transaction, not just the
            // statement: then nothing of this batch is written, and every member hears so.
            if sqlite3_get_autocommit(handle) != 0 {
                outcome = .failure(failure())
                break
            }
        }
        if case .success = outcome {
            do {
                try execute("COMMIT")
                committedBatches.add(1, ordering: .sequentiallyConsistent)
            } catch {
                outcome = .failure(error)
            }
        }
        if case .failure = outcome, sqlite3_get_autocommit(handle) == 0 { _ = try? execute("ROLLBACK") }
        if case .failure(let error) = outcome, (error as? Failure)?.isUnavailable == true {
            writesFailing.store(true, ordering: .releasing)
        }
        for member in batch { member.finish(committed: outcome) }
    }

    /// `body` inside a savepoint of the open transaction; on error only its own changes roll back.
    func savepoint<T>(_ name: String, _ body: () throws -> T) throws -> T {
        try execute("SAVEPOINT \(unescaped: name)")
        do {
            let result = try body()
            try execute("RELEASE \(unescaped: name)")
            return result
        } catch {
            // Unless SQLite already ended the whole transaction (the batch sees that).
            if sqlite3_get_autocommit(handle) == 0 {
                _ = try? execute("ROLLBACK TO \(unescaped: name)")
                _ = try? execute("RELEASE \(unescaped: name)")
            }
            throw error
        }
    }

    /// Runs `sql`, any number of statements without values (the schema), outside the statement cache.
    func executeScript(_ sql: String) throws {
        guard sqlite3_exec(handle, sql, nil, nil, nil) == SQLITE_OK else { throw failure() }
    }

    /// Runs `statement`; returns how many rows it changed.
    @discardableResult
    func execute(_ statement: SQLiteStatement) throws -> Int {
        _ = try query(statement)
        return Int(sqlite3_changes(handle))
    }

    func query(_ query: SQLiteStatement) throws -> [SQLiteRow] {
        let (statement, columns) = try prepared(query.sql)
        defer {
            sqlite3_reset(statement)
            sqlite3_clear_bindings(statement)
        }
        let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)
        for (index, value) in query.bindings.enumerated() {
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
        var rows: [SQLiteRow] = []
        while true {
            let step = sqlite3_step(statement)
            if step == SQLITE_DONE { break }
            guard step == SQLITE_ROW else { throw failure() }
            let values = (0..<sqlite3_column_count(statement)).map { Self.value(statement, column: $0) }
            rows.append(SQLiteRow(values: values, columns: columns))
        }
        steps.add(Int(sqlite3_stmt_status(statement, SQLITE_STMTSTATUS_VM_STEP, 1)), ordering: .relaxed)
        return rows
    }

    private static func value(_ statement: OpaquePointer, column: Int32) -> SQLiteValue {
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
    }

    /// The statement for `sql` and its column map, prepared once and kept.
    private func prepared(_ sql: String) throws -> (statement: OpaquePointer, columns: SQLiteColumns) {
        if let cached = statements[sql] { return cached }
        var prepared: OpaquePointer?
        guard sqlite3_prepare_v2(handle, sql, -1, &prepared, nil) == SQLITE_OK, let statement = prepared else {
            throw failure()
        }
        if statements.count >= Self.maximumCachedStatements {
            for cached in statements.values { sqlite3_finalize(cached.statement) }
            statements.removeAll()
        }
        preparations.add(1, ordering: .relaxed)
        let names = (0..<sqlite3_column_count(statement)).map { String(cString: sqlite3_column_name(statement, $0)) }
        let entry = (statement: statement, columns: SQLiteColumns(names))
        statements[sql] = entry
        return entry
    }

    private func failure() -> Failure {
        Failure(code: sqlite3_extended_errcode(handle), message: String(cString: sqlite3_errmsg(handle)))
    }
}

/// One caller's transaction in a group commit, with the caller waiting for its answer.
private final class GroupCommitMember: @unchecked Sendable {
    private let body: (SQLiteDatabase) throws -> any Sendable
    private let answer: (Result<any Sendable, any Error>) -> Void
    /// Set on the writer thread by ``perform(in:)``, read there by ``finish(committed:)``; nil
    /// when the batch failed before this member ran (its BEGIN was refused).
    private var result: Result<any Sendable, any Error>?

    init<T: Sendable>(body: @escaping @Sendable (SQLiteDatabase) throws -> T, continuation: CheckedContinuation<T, any Error>) {
        self.body = body
        // The batch only ever hands back what this member's own body returned; were that ever
        // broken, the caller gets a storage error, not a trap that stops every tenant.
        answer = { result in
            continuation.resume(
                with: result.flatMap { value in
                    guard let typed = value as? T else {
                        return .failure(StoreError(code: .storage, message: "a group-commit answer was not of its member's type"))
                    }
                    return .success(typed)
                })
        }
    }

    func perform(in database: SQLiteDatabase) {
        result = Result(catching: { try database.savepoint("member") { try body(database) } })
    }

    /// Answers the caller: its own error, else the batch's COMMIT failure, else its value.
    func finish(committed: Result<Void, any Error>) {
        switch (result, committed) {
        case (.failure(let error), _): answer(.failure(error))
        case (_, .failure(let error)): answer(.failure(error))
        case (.success(let value), .success): answer(.success(value))
        case (nil, .success): answer(.failure(CancellationError()))
        }
    }
}
