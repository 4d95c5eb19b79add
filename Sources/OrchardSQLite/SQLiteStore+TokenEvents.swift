import Foundation
import OrchardCore

/// The token-event inbox: Apple's notifications, recorded once per (merchant, event ID) and
/// leased for fetching, one source's items at a time.
extension SQLiteStore {
    static let tokenEventColumns = """
        id, merchant, event_id, source, state, attempts, created_at, next_attempt_at, finished_at, last_error
        """

    static func migrateTokenEvents(_ database: SQLiteDatabase) throws {
        try database.execute(
            """
            CREATE TABLE IF NOT EXISTS token_events (
                id TEXT PRIMARY KEY, merchant TEXT NOT NULL, event_id TEXT NOT NULL, source TEXT NOT NULL, state TEXT NOT NULL,
                attempts INTEGER NOT NULL, created_at INTEGER NOT NULL, next_attempt_at INTEGER, finished_at INTEGER, last_error TEXT,
                UNIQUE (merchant, event_id))
            """)
        try database.execute("CREATE INDEX IF NOT EXISTS token_events_due ON token_events(state, next_attempt_at)")
        try database.execute("CREATE INDEX IF NOT EXISTS token_events_by_source ON token_events(source, state, finished_at)")
    }

    public func recordTokenEvent(_ item: TokenEventItem, maxPendingFromSource: Int) async throws -> TokenEventRecording {
        try await database.run { db in
            try db.transaction {
                let seen = try db.query(
                    "SELECT 1 FROM token_events WHERE merchant = ? AND event_id = ?", [.text(item.merchantIdentifier), .text(item.eventId)])
                guard seen.isEmpty else { return .duplicate }
                let pending =
                    try db.query(
                        "SELECT COUNT(*) FROM token_events WHERE source = ? AND state = 'pending'", [.text(item.source)]
                    ).first?[0].integer ?? 0
                guard pending < Int64(maxPendingFromSource) else { return .sourceFull }
                try db.execute(
                    "INSERT INTO token_events (\(Self.tokenEventColumns)) VALUES (\(Self.placeholders(10)))",
                    [
                        .text(item.id), .text(item.merchantIdentifier), .text(item.eventId), .text(item.source), .text(item.state.rawValue),
                        .integer(Int64(item.attempts)), .time(item.createdAt), item.nextAttemptAt.map(SQLiteValue.time) ?? .null,
                        item.finishedAt.map(SQLiteValue.time) ?? .null, item.lastError.map(SQLiteValue.text) ?? .null,
                    ])
                return .recorded
            }
        }
    }

    public func leaseTokenEvents(at date: Date, until leaseEnd: Date, perSource: Int, limit: Int) async throws -> [TokenEventItem] {
        try await database.run { db in
            try db.transaction {
                let due = try db.query(
                    """
                    SELECT \(Self.tokenEventColumns) FROM (
                        SELECT \(Self.tokenEventColumns), rowid AS position,
                        ROW_NUMBER() OVER (PARTITION BY source ORDER BY next_attempt_at, rowid) AS rank
                        FROM token_events WHERE state = 'pending' AND next_attempt_at <= ?)
                    WHERE rank <= ? ORDER BY next_attempt_at, position LIMIT ?
                    """, [.time(date), .integer(Int64(perSource)), .integer(Int64(limit))]
                ).map(Self.tokenEvent)
                for item in due {
                    try db.execute("UPDATE token_events SET next_attempt_at = ? WHERE id = ?", [.time(leaseEnd), .text(item.id)])
                }
                return due.map { item in
                    var leased = item
                    leased.nextAttemptAt = SQLiteValue.time(leaseEnd).date
                    return leased
                }
            }
        }
    }

    public func recordTokenEventAttempt(_ attempt: TokenEventAttempt) async throws -> Bool {
        try await database.run { db in
            try db.execute(
                """
                UPDATE token_events SET state = ?, attempts = attempts + ?, next_attempt_at = ?,
                last_error = CASE WHEN ? THEN ? ELSE last_error END,
                finished_at = CASE WHEN ? = 'pending' THEN NULL ELSE ? END
                WHERE id = ? AND state = 'pending' AND attempts = ?
                """,
                [
                    .text(attempt.state.rawValue), .integer(attempt.counted ? 1 : 0),
                    attempt.state == .pending ? attempt.nextAttemptAt.map(SQLiteValue.time) ?? .null : .null,
                    .integer(attempt.counted ? 1 : 0), attempt.error.map(SQLiteValue.text) ?? .null, .text(attempt.state.rawValue),
                    .time(attempt.at), .text(attempt.itemId), .integer(Int64(attempt.attempts)),
                ])
        } == 1
    }

    public func tokenEventStandings(sources: [String]) async throws -> [String: TokenEventSourceStanding] {
        guard !sources.isEmpty else { return [:] }
        let rows = try await database.read { db in
            try db.query(
                """
                SELECT source, MAX(CASE WHEN state = 'applied' THEN finished_at END), MAX(CASE WHEN state = 'unknown' THEN finished_at END)
                FROM token_events WHERE source IN (\(Self.placeholders(sources.count))) AND state IN ('applied', 'unknown')
                GROUP BY source
                """, sources.map(SQLiteValue.text))
        }
        var standings: [String: TokenEventSourceStanding] = [:]
        for row in rows {
            standings[row[0].text ?? ""] = TokenEventSourceStanding(
                lastConfirmed: row[1].integer.map { _ in row[1].date }, lastRefuted: row[2].integer.map { _ in row[2].date })
        }
        return standings
    }

    public func tokenEvent(merchantIdentifier: String, eventId: String) async throws -> TokenEventItem? {
        try await database.read { db in
            try db.query(
                "SELECT \(Self.tokenEventColumns) FROM token_events WHERE merchant = ? AND event_id = ?",
                [.text(merchantIdentifier), .text(eventId)])
        }.first.map(Self.tokenEvent)
    }

    /// Deletes at most `limit` items finished before `date`.
    func purgeTokenEvents(finishedBefore date: Date, limit: Int) async throws -> Int {
        try await database.run { db in
            try db.execute(
                """
                DELETE FROM token_events WHERE rowid IN (SELECT rowid FROM token_events
                WHERE state IN ('applied', 'unknown', 'failed') AND finished_at < ? LIMIT ?)
                """, [.time(date), .integer(Int64(limit))])
        }
    }

    static func tokenEvent(_ row: [SQLiteValue]) -> TokenEventItem {
        TokenEventItem(
            id: row[0].text ?? "", merchantIdentifier: row[1].text ?? "", eventId: row[2].text ?? "", source: row[3].text ?? "",
            state: TokenEventItem.State(rawValue: row[4].text ?? "") ?? .pending, attempts: Int(row[5].integer ?? 0),
            createdAt: row[6].date, nextAttemptAt: row[7].integer.map { _ in row[7].date },
            finishedAt: row[8].integer.map { _ in row[8].date }, lastError: row[9].text)
    }
}
