import Foundation
import OrchardCore
import PostgresNIO

/// The token-event inbox: Apple's notifications, recorded once per (merchant, event ID) and
/// leased for fetching with `FOR UPDATE SKIP LOCKED`, one source's items at a time.
extension PostgresStore {
    static let tokenEventColumns = """
        id, merchant, event_id, source, state, attempts, created_at, next_attempt_at, finished_at, last_error
        """

    public func recordTokenEvent(_ item: TokenEventItem, maxPendingFromSource: Int) async throws -> TokenEventRecording {
        try await transaction { [self] connection in
            // Instances recording for the same source take turns, so the cap holds exactly.
            try await connection.query(
                "SELECT pg_advisory_xact_lock(\(LockSpace.tokenEventSource.rawValue), hashtext(\(item.source)))", logger: logger)
            let seen = try await connection.rows(
                "SELECT 1 AS seen FROM token_events WHERE merchant = \(item.merchantIdentifier) AND event_id = \(item.eventId)", logger)
            guard seen.isEmpty else { return .duplicate }
            let pending =
                try await connection.rows(
                    "SELECT COUNT(*) AS n FROM token_events WHERE source = \(item.source) AND state = 'pending'", logger
                ).first?.integer("n") ?? 0
            guard pending < Int64(maxPendingFromSource) else { return .sourceFull }
            // Another source may record the same event at this moment: the unique key decides.
            let inserted = try await connection.rows(
                """
                INSERT INTO token_events (\(unescaped: Self.tokenEventColumns)) VALUES (
                \(item.id), \(item.merchantIdentifier), \(item.eventId), \(item.source), \(item.state.rawValue), \(Int64(item.attempts)),
                \(item.createdAt), \(item.nextAttemptAt), \(item.finishedAt), \(item.lastError))
                ON CONFLICT (merchant, event_id) DO NOTHING RETURNING id
                """, logger)
            return inserted.isEmpty ? .duplicate : .recorded
        }
    }

    public func leaseTokenEvents(at date: Date, until leaseEnd: Date, perSource: Int, limit: Int) async throws -> [TokenEventItem] {
        let leased = try await rows(
            """
            WITH ranked AS (
                SELECT id, ROW_NUMBER() OVER (PARTITION BY source ORDER BY next_attempt_at, seq) AS rank FROM token_events
                WHERE state = 'pending' AND next_attempt_at <= \(date)),
            due AS (
                SELECT t.id, t.next_attempt_at AS due_at, t.seq FROM token_events t JOIN ranked r ON r.id = t.id
                WHERE r.rank <= \(Int64(perSource)) AND t.state = 'pending' AND t.next_attempt_at <= \(date)
                ORDER BY t.next_attempt_at, t.seq LIMIT \(Int64(limit)) FOR UPDATE OF t SKIP LOCKED)
            UPDATE token_events e SET next_attempt_at = \(leaseEnd) FROM due WHERE e.id = due.id
            RETURNING \(unescaped: Self.qualified(Self.tokenEventColumns, by: "e")), due.due_at, due.seq
            """)
        return try leased.sorted { try ($0.date("due_at"), $0.integer("seq")) < ($1.date("due_at"), $1.integer("seq")) }
            .map(Self.tokenEvent)
    }

    public func recordTokenEventAttempt(_ attempt: TokenEventAttempt) async throws -> Bool {
        let next = attempt.state == .pending ? attempt.nextAttemptAt : nil
        let finished = attempt.state == .pending ? nil : attempt.at
        return try await rows(
            """
            UPDATE token_events SET state = \(attempt.state.rawValue), attempts = attempts + \(Int64(attempt.counted ? 1 : 0)),
            next_attempt_at = \(next), finished_at = \(finished),
            last_error = CASE WHEN \(attempt.counted) THEN \(attempt.error) ELSE last_error END
            WHERE id = \(attempt.itemId) AND state = 'pending' AND attempts = \(Int64(attempt.attempts)) RETURNING id
            """
        ).count == 1
    }

    public func tokenEventStandings(sources: [String]) async throws -> [String: TokenEventSourceStanding] {
        guard !sources.isEmpty else { return [:] }
        var standings: [String: TokenEventSourceStanding] = [:]
        for row in try await rows(
            """
            SELECT source, MAX(finished_at) FILTER (WHERE state = 'applied') AS confirmed,
            MAX(finished_at) FILTER (WHERE state = 'unknown') AS refuted
            FROM token_events WHERE source = ANY(\(sources)) AND state IN ('applied', 'unknown') GROUP BY source
            """)
        {
            standings[try row.text("source")] = TokenEventSourceStanding(
                lastConfirmed: try row.optionalDate("confirmed"), lastRefuted: try row.optionalDate("refuted"))
        }
        return standings
    }

    public func tokenEvent(merchantIdentifier: String, eventId: String) async throws -> TokenEventItem? {
        try await rows(
            """
            SELECT \(unescaped: Self.tokenEventColumns) FROM token_events WHERE merchant = \(merchantIdentifier) AND event_id = \(eventId)
            """
        ).first.map(Self.tokenEvent)
    }

    /// Deletes at most `limit` items finished before `date`.
    func purgeTokenEvents(finishedBefore date: Date, limit: Int64) async throws -> Int {
        try await rows(
            """
            DELETE FROM token_events WHERE id IN (SELECT id FROM token_events
            WHERE state <> 'pending' AND finished_at < \(date) LIMIT \(limit) FOR UPDATE SKIP LOCKED) RETURNING id
            """
        ).count
    }

    static func tokenEvent(_ row: PostgresRandomAccessRow) throws -> TokenEventItem {
        TokenEventItem(
            id: try row.text("id"), merchantIdentifier: try row.text("merchant"), eventId: try row.text("event_id"),
            source: try row.text("source"), state: TokenEventItem.State(rawValue: try row.text("state")) ?? .pending,
            attempts: Int(try row.integer("attempts")), createdAt: try row.date("created_at"),
            nextAttemptAt: try row.optionalDate("next_attempt_at"), finishedAt: try row.optionalDate("finished_at"),
            lastError: try row.optionalText("last_error"))
    }
}
