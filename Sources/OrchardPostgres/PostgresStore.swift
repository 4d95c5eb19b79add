import ApplePay
import Foundation
import Logging
import NIOCore
import NIOPosix
import OrchardCore
import PostgresNIO
import ServiceLifecycle
import Synchronization

/// The PostgreSQL store: one database that several Orchard instances share. Same contract as
/// the SQLite store: every state move is a compare-and-set in one transaction (rows are locked
/// in one order, orders before payments, so concurrent moves wait rather than deadlock), webhook
/// events are written in the transaction of the move they report, and background work is
/// leased with `FOR UPDATE SKIP LOCKED`.
///
/// ``open(_:logger:eventLoops:)`` connects once (so a wrong host, password or certificate is one
/// clear error) and migrates the schema. The store is then a `Service`: its ``run()`` is the
/// connection pool's, in the server's `ServiceGroup` (stopped after the services that query it)
/// or, for a tool or a test, in ``withRunning(_:)``. Its connections close when it returns.
public final class PostgresStore: OrchardStore, Service {
    let client: PostgresClient
    /// For queries: never below `info`, so postgres-nio's debug logs (statements and their
    /// values) stay out of the log whatever the server's level.
    let logger: Logger
    private let started = StartSignal()
    /// Statements sent on their own, through ``rows(_:)`` and ``statement(_:)``, and transactions
    /// begun by ``transaction(_:)`` (each at least a BEGIN, a statement and a COMMIT): tests count
    /// an operation's round trips with them.
    let roundTrips = Atomic<Int>(0)
    let transactions = Atomic<Int>(0)
    /// What each recently claimed order's moves report, by order ID (``MoveContext``).
    let moveContexts = Mutex<[String: MoveContext]>([:])
    /// The open orders this store wrote and no claim has taken yet, by ID (``RememberedOrder``).
    let rememberedOrders = Mutex(RememberedOrders())

    /// How long a statement or transaction waits for a pooled connection (``leased(_:)``).
    let acquireTimeout: Duration
    /// How long it may then take on that connection before the connection is closed (``leased(_:)``).
    let callTimeout: Duration
    /// The pool's event loops: a call's deadlines are timers scheduled on them (``leased(_:)``).
    let timers: any EventLoopGroup
    /// TCP keepalive for this end of each connection, when over TCP (``keepAlive(_:)``).
    let keepalive: PostgresSettings.SessionLimits?
    /// The connections whose socket has its keepalive set; each leaves when it closes.
    let keptAlive = Mutex<Set<PostgresConnection.ID>>([])
    /// Told by every call whether the database answered or could not be reached.
    public let availability: StoreAvailability? = StoreAvailability()

    private init(client: PostgresClient, logger: Logger, settings: PostgresSettings, eventLoops: any EventLoopGroup) {
        self.client = client
        self.timers = eventLoops
        self.logger = logger
        self.acquireTimeout = settings.acquireTimeout
        self.callTimeout = settings.limits.callTimeout
        if case .tcp = settings.endpoint { keepalive = settings.limits } else { keepalive = nil }
    }

    /// Runs the connection pool until the task is cancelled or the service group shuts it down
    /// gracefully, then closes its connections. Called once: a query waits until it has begun.
    public func run() async {
        started.signal()
        await client.run()
    }

    /// Returns once ``run()`` has begun: a query asked before then waits for it, and postgres-nio
    /// logs a warning.
    public func running() async {
        await started.wait()
    }

    /// Runs the pool for the time `body` takes, then stops it and closes its connections: for tools
    /// and tests that use the store outside a server's service group.
    public func withRunning<T: Sendable>(_ body: (PostgresStore) async throws -> T) async throws -> T {
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await self.run() }
            defer { group.cancelAll() }
            await running()
            return try await body(self)
        }
    }

    /// Connects and migrates (the pool starts with ``run()``); a failure is one line naming what to fix.
    /// `eventLoops` default to NIO's shared ones; tests give the store its own.
    public static func open(
        _ settings: PostgresSettings, logger: Logger, eventLoops: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton
    ) async throws(ConfigurationError) -> PostgresStore {
        var quiet = logger
        quiet.logLevel = max(logger.logLevel, .info)
        let applied = try await migrate(settings, logger: quiet, eventLoops: eventLoops)
        if !applied.isEmpty {
            logger.notice(
                "PostgreSQL schema migrated",
                metadata: ["database": "\(settings.database)", "versions": "\(applied.map { String($0.version) }.joined(separator: ","))"])
        }
        logger.info(
            "store: PostgreSQL",
            metadata: ["server": "\(settings.location)", "database": "\(settings.database)", "poolSize": "\(settings.poolSize)"])
        return try client(settings, logger: logger, eventLoops: eventLoops)
    }

    /// The store on the database as it is, nothing created or migrated (`orchard doctor`): the
    /// pool of ``open(_:logger:eventLoops:)`` without its migration. Run it with ``withRunning(_:)``.
    public static func client(
        _ settings: PostgresSettings, logger: Logger, eventLoops: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton
    ) throws(ConfigurationError) -> PostgresStore {
        var quiet = logger
        quiet.logLevel = max(logger.logLevel, .info)
        // The pool's own notes (a connection made or dropped) are not the operator's concern.
        var background = logger
        background.logLevel = max(logger.logLevel, .notice)
        let client = PostgresClient(
            configuration: try clientConfiguration(settings), eventLoopGroup: eventLoops, backgroundLogger: background)
        return PostgresStore(client: client, logger: quiet, settings: settings, eventLoops: eventLoops)
    }

    // MARK: Transactions and errors

    /// Runs `body` in one transaction on one pooled connection (BEGIN, COMMIT, or ROLLBACK when it
    /// throws). A deadlock or serialization failure (another
    /// instance's transaction won) runs it again; any other database failure is a
    /// ``StoreError/Code/storage``.
    func transaction<T: Sendable>(_ body: @escaping @Sendable (PostgresConnection) async throws -> T) async throws -> T {
        var attempt = 1
        while true {
            transactions.add(1, ordering: .relaxed)
            do {
                return try await leased { [self] connection in try await inTransaction(connection, body) }
            } catch {
                let cause = Self.cause(error)
                if attempt < 3, let failure = cause as? PSQLError, ["40001", "40P01"].contains(failure.sqlState) {
                    attempt += 1
                    continue
                }
                throw Self.storeError(cause)
            }
        }
    }

    /// BEGIN, `body`, COMMIT; ROLLBACK when `body` throws, unless the connection is gone (closed by
    /// the call's deadline, or lost): postgres-nio's `withTransaction` sends its ROLLBACK regardless,
    /// and a statement written to a closed connection never completes. The server rolls back a
    /// transaction whose connection ends.
    private func inTransaction<T>(_ connection: PostgresConnection, _ body: @Sendable (PostgresConnection) async throws -> T) async throws
        -> T
    {
        try await connection.query("BEGIN", logger: logger)
        let value: T
        do {
            value = try await body(connection)
        } catch {
            if !connection.isClosed && !Self.endsSession(error) {
                _ = try? await connection.query("ROLLBACK", logger: logger)
            }
            throw error
        }
        try await connection.query("COMMIT", logger: logger)
        return value
    }

    /// What made a transaction fail: the body's own error (a ``Conflict``, a ``StoreError``, a
    /// statement's `PSQLError`), else the COMMIT's or the BEGIN's.
    static func cause(_ error: any Error) -> any Error {
        guard let failure = error as? PostgresTransactionError else { return error }
        return failure.closureError ?? failure.commitError ?? failure.beginError ?? error
    }

    /// Runs one statement outside a transaction and returns its rows.
    func rows(_ query: PostgresQuery) async throws -> [PostgresRandomAccessRow] {
        try await rows(query) { try await self.send($0) }
    }

    /// Runs one statement outside a transaction, as the prepared statement `name`, and returns its rows.
    func rows<Name: PreparedStatementName>(_ query: PostgresQuery, prepared name: Name.Type) async throws -> [PostgresRandomAccessRow] {
        try await rows(query) { try await self.send($0, prepared: name) }
    }

    private func rows(_ query: PostgresQuery, _ send: (PostgresQuery) async throws -> [PostgresRandomAccessRow]) async throws
        -> [PostgresRandomAccessRow]
    {
        roundTrips.add(1, ordering: .relaxed)
        do {
            return try await send(query)
        } catch {
            throw Self.storeError(error)
        }
    }

    /// Runs one statement on its own, outside any transaction: PostgreSQL runs it atomically
    /// (autocommit), in one round trip with no BEGIN or COMMIT. A deadlock or serialization
    /// failure runs it again (each such statement re-checks everything it relies on); any other
    /// failure is thrown as the driver reported it, for the caller to tell a unique violation apart.
    func statement(_ query: PostgresQuery) async throws -> [PostgresRandomAccessRow] {
        try await statement(query) { try await self.send($0) }
    }

    /// ``statement(_:)`` as the prepared statement `name`.
    func statement<Name: PreparedStatementName>(_ query: PostgresQuery, prepared name: Name.Type) async throws
        -> [PostgresRandomAccessRow]
    {
        try await statement(query) { try await self.send($0, prepared: name) }
    }

    private func statement(_ query: PostgresQuery, _ send: (PostgresQuery) async throws -> [PostgresRandomAccessRow]) async throws
        -> [PostgresRandomAccessRow]
    {
        var attempt = 1
        while true {
            roundTrips.add(1, ordering: .relaxed)
            do {
                return try await send(query)
            } catch let error as PSQLError where attempt < 3 && ["40001", "40P01"].contains(error.sqlState) {
                attempt += 1
            } catch let error where Self.isUnreachable(error) {
                throw Self.storeError(error)
            }
        }
    }

    private func send(_ query: PostgresQuery) async throws -> [PostgresRandomAccessRow] {
        try await leased { [self] connection in
            try await connection.query(query, logger: logger).collect().map { $0.makeRandomAccess() }
        }
    }

    /// Sends `query` as the prepared statement `name`: postgres-nio prepares it on the connection
    /// the first time it runs there (one more round trip, once per connection), then only binds
    /// and runs it.
    private func send<Name: PreparedStatementName>(_ query: PostgresQuery, prepared name: Name.Type) async throws
        -> [PostgresRandomAccessRow]
    {
        try await leased { [self] connection in try await execute(query, prepared: name, on: connection) }
    }

    /// `query` as the prepared statement `name`, on `connection`: its rows.
    func execute<Name: PreparedStatementName>(_ query: PostgresQuery, prepared name: Name.Type, on connection: PostgresConnection)
        async throws -> [PostgresRandomAccessRow]
    {
        PreparedTexts.register(query.sql, as: Name.name)
        var rows: [PostgresRandomAccessRow] = []
        for try await row in try await connection.execute(Prepared<Name>(bindings: query.binds), logger: logger) {
            rows.append(row)
        }
        return rows
    }

    /// Runs `body` with one pooled connection for all its statements, sent one after another, each
    /// on its own (autocommitted, no transaction): one lease, and one deadline, for an operation
    /// that reads, decides and writes, instead of one per statement.
    func pinned<T: Sendable>(_ body: @escaping @Sendable (Pinned) async throws -> T) async throws -> T {
        try await leased { [self] connection in try await body(Pinned(store: self, connection: connection)) }
    }

    /// Statements on the one connection ``pinned(_:)`` leased. Their failures are thrown as the
    /// driver reported them, so that the lease sees a connection that ended; the caller maps them
    /// (``storeError(_:)``) once outside ``pinned(_:)``.
    struct Pinned: Sendable {
        let store: PostgresStore
        let connection: PostgresConnection

        func rows<Name: PreparedStatementName>(_ query: PostgresQuery, prepared name: Name.Type) async throws
            -> [PostgresRandomAccessRow]
        {
            store.roundTrips.add(1, ordering: .relaxed)
            return try await store.execute(query, prepared: name, on: connection)
        }

        /// A deadlock or serialization failure runs it again, as ``statement(_:prepared:)`` does.
        func statement<Name: PreparedStatementName>(_ query: PostgresQuery, prepared name: Name.Type) async throws
            -> [PostgresRandomAccessRow]
        {
            var attempt = 1
            while true {
                store.roundTrips.add(1, ordering: .relaxed)
                do {
                    return try await store.execute(query, prepared: name, on: connection)
                } catch let error as PSQLError where attempt < 3 && ["40001", "40P01"].contains(error.sqlState) {
                    attempt += 1
                }
            }
        }
    }

    /// Thrown inside a transaction to roll it back when a compare-and-set finds another state.
    struct Conflict: Error {}

    static func storeError(_ error: any Error) -> any Error {
        if error is StoreError || error is CoreError || error is Conflict || error is CancellationError { return error }
        if isUnreachable(error) {
            return StoreError(code: .unavailable, message: "the PostgreSQL database cannot be reached: \(describe(error))")
        }
        return StoreError(code: .storage, message: "the PostgreSQL store failed: \(describe(error))")
    }

    /// What went wrong, without the statement's values.
    static func describe(_ error: any Error) -> String {
        guard let error = error as? PSQLError else { return "\(error)" }
        if let message = error.serverInfo?[.message] {
            return message + (error.sqlState.map { " (SQLSTATE \($0))" } ?? "")
        }
        if let underlying = error.underlying { return "\(error.code): \(underlying)" }
        return "\(error.code)"
    }

    /// `a, b` as `alias.a, alias.b`.
    static func qualified(_ columns: String, by alias: String) -> String {
        columns.split(separator: ",").map { "\(alias).\($0.trimmingCharacters(in: .whitespacesAndNewlines))" }.joined(separator: ", ")
    }

    /// Decodes a JSON column written by this store.
    static func decode<T: Decodable>(_ type: T.Type, _ text: String) throws -> T {
        try JSONDecoder().decode(type, from: Data(text.utf8))
    }

    /// JSON with sorted keys, as the SQLite store writes it.
    static func json(_ value: some Encodable) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        return String(decoding: try encoder.encode(value), as: UTF8.self)
    }
}

/// Opens once; whoever waits before then resumes when it opens.
final class StartSignal: Sendable {
    private let state = Mutex<(signalled: Bool, waiting: [CheckedContinuation<Void, Never>])>((false, []))

    func signal() {
        let waiting = state.withLock { state in
            state.signalled = true
            defer { state.waiting = [] }
            return state.waiting
        }
        for continuation in waiting { continuation.resume() }
    }

    func wait() async {
        await withCheckedContinuation { continuation in
            let now = state.withLock { state in
                if !state.signalled { state.waiting.append(continuation) }
                return state.signalled
            }
            if now { continuation.resume() }
        }
    }
}

extension PostgresConnection {
    /// Runs one statement in the current transaction and returns its rows.
    func rows(_ query: PostgresQuery, _ logger: Logger) async throws -> [PostgresRandomAccessRow] {
        try await self.query(query, logger: logger).collect().map { $0.makeRandomAccess() }
    }
}

extension PSQLError {
    /// The server's SQLSTATE (`23505` a unique violation, `40P01` a deadlock); nil for a client-side failure.
    var sqlState: String? { serverInfo?[.sqlState] }
    /// The constraint a violation names.
    var constraint: String? { serverInfo?[.constraintName] }
}

extension PostgresRandomAccessRow {
    func text(_ column: String) throws -> String { try self[column].decode(String.self) }
    func optionalText(_ column: String) throws -> String? { try self[column].decode(String?.self) }
    func integer(_ column: String) throws -> Int64 { try self[column].decode(Int64.self) }
    func bool(_ column: String) throws -> Bool { try self[column].decode(Bool.self) }
    func optionalInteger(_ column: String) throws -> Int64? { try self[column].decode(Int64?.self) }
    func date(_ column: String) throws -> Date { try self[column].decode(Date.self) }
    func optionalDate(_ column: String) throws -> Date? { try self[column].decode(Date?.self) }
    func bytes(_ column: String) throws -> [UInt8] { Array(try self[column].decode(ByteBuffer.self).readableBytesView) }
    func optionalBytes(_ column: String) throws -> [UInt8]? {
        try self[column].decode(ByteBuffer?.self).map { Array($0.readableBytesView) }
    }
}

extension Array where Element == UInt8 {
    /// As a `bytea` value (a plain `[UInt8]` would bind as an array of `"char"`).
    var bytea: ByteBuffer { ByteBuffer(bytes: self) }
}

extension PostgresStore {
    /// Namespaces of the (int, int) advisory locks taken on rows that may not exist yet: two
    /// instances inserting for the same merchant or Idempotency-Key take turns.
    enum LockSpace: Int32 {
        case merchantKeys = 1
        case idempotencyKey = 2
        /// Recording Apple's token notifications from one source (TokenEvents).
        case tokenEventSource = 3
    }
}
