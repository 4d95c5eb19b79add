import Foundation
import OrchardCore

/// The token-event inbox: Apple's notifications, recorded once per (merchant, event ID) and
/// leased for fetching, one source's items at a time.
extension SQLiteStore {
    static let tokenEventColumns = """
        id, merchant, event_id, source, state, attempts, created_at, next_attempt_at, finished_at, last_error
        """

    public func recordTokenEvent(_ item: TokenEventItem, maxPendingFromSource: Int) async throws -> TokenEventRecording {
        try await database.run { db in
            let seen = try db.query(
                "SELECT 1 FROM token_events WHERE merchant = \(item.merchantIdentifier) AND event_id = \(item.eventId)")
            guard seen.isEmpty else { return .duplicate }
            let pending =
                try db.query(
                    "SELECT COUNT(*) AS pending FROM token_events WHERE source = \(item.source) AND state = 'pending'"
                ).first?.int("pending") ?? 0
            guard pending < maxPendingFromSource else { return .sourceFull }
            try db.execute(
                """
                INSERT INTO token_events (\(unescaped: Self.tokenEventColumns)) VALUES (
                \(item.id), \(item.merchantIdentifier), \(item.eventId), \(item.source), \(item.state), \(item.attempts),
                \(item.createdAt), \(item.nextAttemptAt), \(item.finishedAt), \(item.lastError))
                """)
            return .recorded
        }
    }

    public func leaseTokenEvents(at date: Date, until leaseEnd: Date, perSource: Int, limit: Int) async throws -> [TokenEventItem] {
        try await database.run { db in
            let due = try db.query(
                """
                SELECT \(unescaped: Self.tokenEventColumns) FROM (
                    SELECT \(unescaped: Self.tokenEventColumns), rowid AS position,
                    ROW_NUMBER() OVER (PARTITION BY source ORDER BY next_attempt_at, rowid) AS rank
                    FROM token_events WHERE state = 'pending' AND next_attempt_at <= \(date))
                WHERE rank <= \(perSource) ORDER BY next_attempt_at, position LIMIT \(limit)
                """
            ).map(Self.tokenEvent)
            for item in due {
                try db.execute("UPDATE token_events SET next_attempt_at = \(leaseEnd) WHERE id = \(item.id)")
            }
            return due.map { item in
                var leased = item
                leased.nextAttemptAt = Self.stored(leaseEnd)
                return leased
            }
        }
    }

    public func recordTokenEventAttempt(_ attempt: TokenEventAttempt) async throws -> Bool {
        try await write(
            """
            UPDATE token_events SET state = \(attempt.state), attempts = attempts + \(attempt.counted ? 1 : 0),
            next_attempt_at = \(attempt.state == .pending ? attempt.nextAttemptAt : nil),
            last_error = CASE WHEN \(attempt.counted) THEN \(attempt.error) ELSE last_error END,
            finished_at = CASE WHEN \(attempt.state) = 'pending' THEN NULL ELSE \(attempt.at) END
            WHERE id = \(attempt.itemId) AND state = 'pending' AND attempts = \(attempt.attempts)
            """) == 1
    }

    public func tokenEventStandings(sources: [String]) async throws -> [String: TokenEventSourceStanding] {
        guard !sources.isEmpty else { return [:] }
        // SQLite has no array parameter: the sources go in as one JSON array.
        let list = try Self.json(sources)
        let latest = try await rows(
            """
            SELECT source, MAX(CASE WHEN state = 'applied' THEN finished_at END) AS confirmed,
            MAX(CASE WHEN state = 'unknown' THEN finished_at END) AS refuted
            FROM token_events WHERE source IN (SELECT value FROM json_each(\(list))) AND state IN ('applied', 'unknown')
            GROUP BY source
            """)
        var standings: [String: TokenEventSourceStanding] = [:]
        for row in latest {
            standings[row.text("source")] = TokenEventSourceStanding(
                lastConfirmed: row.optionalDate("confirmed"), lastRefuted: row.optionalDate("refuted"))
        }
        return standings
    }

    public func tokenEvent(merchantIdentifier: String, eventId: String) async throws -> TokenEventItem? {
        try await rows(
            "SELECT \(unescaped: Self.tokenEventColumns) FROM token_events WHERE merchant = \(merchantIdentifier) AND event_id = \(eventId)"
        ).first.map(Self.tokenEvent)
    }

    /// Deletes at most `limit` items finished before `date`.
    func purgeTokenEvents(finishedBefore date: Date, limit: Int) async throws -> Int {
        try await write(
            """
            DELETE FROM token_events WHERE rowid IN (SELECT rowid FROM token_events
            WHERE state IN ('applied', 'unknown', 'failed') AND finished_at < \(date) LIMIT \(limit))
            """)
    }

    static func tokenEvent(_ row: SQLiteRow) -> TokenEventItem {
        TokenEventItem(
            id: row.text("id"), merchantIdentifier: row.text("merchant"), eventId: row.text("event_id"), source: row.text("source"),
            state: row.value("state") ?? .pending, attempts: row.int("attempts"), createdAt: row.date("created_at"),
            nextAttemptAt: row.optionalDate("next_attempt_at"), finishedAt: row.optionalDate("finished_at"),
            lastError: row.optionalText("last_error"))
    }
}
