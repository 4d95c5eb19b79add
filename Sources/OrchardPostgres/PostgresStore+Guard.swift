import Foundation
import OrchardCore
import PostgresNIO

/// The guard's records: made what configuration and the registry watch, leased by due time with
/// `FOR UPDATE SKIP LOCKED`, and written by a compare-and-set on their version, with the events
/// that report the change.
extension PostgresStore {
    static let guardColumns = """
        merchant, kind, target, state, stage, detail, expires_at, checked_at, first_failure_at, changed_at, failures, repairs,
        next_check_at, version
        """

    public func syncGuardSubjects(_ subjects: Set<GuardSubject>, at date: Date) async throws {
        // Inserted in key order, so two instances syncing at once take the rows' locks in one order.
        let sorted = subjects.sorted {
            ($0.merchantIdentifier, $0.kind.rawValue, $0.target) < ($1.merchantIdentifier, $1.kind.rawValue, $1.target)
        }
        let (merchants, kinds, targets) = (sorted.map(\.merchantIdentifier), sorted.map(\.kind.rawValue), sorted.map(\.target))
        // A new record as Core makes it: its state, detail and counts are not decided here.
        let new = GuardRecord(subject: GuardSubject(merchantIdentifier: "", kind: .domainFile, target: ""), nextCheckAt: date)
        try await transaction { [self] connection in
            try await connection.query(
                """
                DELETE FROM guard_records WHERE (merchant, kind, target) NOT IN (
                    SELECT m, k, t FROM unnest(\(merchants)::text[], \(kinds)::text[], \(targets)::text[]) AS s(m, k, t))
                """, logger: logger)
            try await connection.query(
                """
                INSERT INTO guard_records (\(unescaped: Self.guardColumns))
                SELECT m, k, t, \(new.state.rawValue), \(Int64(new.stage)), \(new.detail), \(new.expiresAt), \(new.checkedAt),
                \(new.firstFailureAt), \(new.changedAt), \(Int64(new.failures)), \(Int64(new.repairs)), \(new.nextCheckAt),
                \(Int64(new.version))
                FROM unnest(\(merchants)::text[], \(kinds)::text[], \(targets)::text[]) WITH ORDINALITY AS s(m, k, t, position)
                ORDER BY position ON CONFLICT (merchant, kind, target) DO NOTHING
                """, logger: logger)
        }
    }

    public func leaseGuardChecks(at date: Date, until leaseEnd: Date, limit: Int) async throws -> [GuardRecord] {
        // The lock re-checks that a row is still due, so two instances never lease the same record.
        let leased = try await rows(
            """
            WITH due AS (
                SELECT merchant, kind, target, next_check_at AS due_at FROM guard_records WHERE next_check_at <= \(date)
                ORDER BY next_check_at, merchant, kind, target LIMIT \(Int64(max(limit, 0))) FOR UPDATE SKIP LOCKED)
            UPDATE guard_records g SET next_check_at = \(leaseEnd), version = g.version + 1 FROM due
            WHERE g.merchant = due.merchant AND g.kind = due.kind AND g.target = due.target
            RETURNING \(unescaped: Self.qualified(Self.guardColumns, by: "g")), due.due_at
            """)
        // RETURNING comes in no particular order: the longest due first, then by key, as listed.
        let records = try leased.compactMap { row in try Self.guardRecord(row).map { (due: try row.date("due_at"), record: $0) } }
        return records.sorted { left, right in
            let (l, r) = (left.record.subject, right.record.subject)
            return (left.due, l.merchantIdentifier, l.kind.rawValue, l.target) < (
                right.due, r.merchantIdentifier, r.kind.rawValue, r.target
            )
        }.map(\.record)
    }

    public func recordGuardCheck(_ record: GuardRecord, events: [WebhookEvent]) async throws -> Bool {
        let subject = record.subject
        let update: PostgresQuery = """
            UPDATE guard_records SET state = \(record.state.rawValue), stage = \(Int64(record.stage)), detail = \(record.detail),
            expires_at = \(record.expiresAt), checked_at = \(record.checkedAt), first_failure_at = \(record.firstFailureAt),
            changed_at = \(record.changedAt), failures = \(Int64(record.failures)), repairs = \(Int64(record.repairs)),
            next_check_at = \(record.nextCheckAt), version = version + 1
            WHERE merchant = \(subject.merchantIdentifier) AND kind = \(subject.kind.rawValue) AND target = \(subject.target)
            AND version = \(Int64(record.version)) RETURNING version
            """
        // Without events the compare-and-set is one statement; with them, one transaction.
        guard !events.isEmpty else { return try await rows(update).count == 1 }
        return try await transaction { [self] connection in
            guard try await connection.rows(update, logger).count == 1 else { return false }
            for event in events { try await insertEvent(event, on: connection) }
            return true
        }
    }

    public func guardRecords(merchantIdentifier: String?) async throws -> [GuardRecord] {
        // The key's columns are `COLLATE "C"`: byte order, as the in-memory store sorts.
        try await rows(
            """
            SELECT \(unescaped: Self.guardColumns) FROM guard_records
            WHERE (\(merchantIdentifier)::text IS NULL OR merchant = \(merchantIdentifier)) ORDER BY merchant, kind, target
            """
        ).compactMap(Self.guardRecord)
    }

    /// Nil for a kind of check this Orchard does not know (the next sync deletes the row).
    static func guardRecord(_ row: PostgresRandomAccessRow) throws -> GuardRecord? {
        guard let kind = GuardCheckKind(rawValue: try row.text("kind")) else { return nil }
        return GuardRecord(
            subject: GuardSubject(merchantIdentifier: try row.text("merchant"), kind: kind, target: try row.text("target")),
            state: GuardState(rawValue: try row.text("state")) ?? .pending, stage: Int(try row.integer("stage")),
            detail: try row.text("detail"), expiresAt: try row.optionalDate("expires_at"), checkedAt: try row.optionalDate("checked_at"),
            firstFailureAt: try row.optionalDate("first_failure_at"), changedAt: try row.optionalDate("changed_at"),
            failures: Int(try row.integer("failures")), repairs: Int(try row.integer("repairs")),
            nextCheckAt: try row.date("next_check_at"), version: Int(try row.integer("version")))
    }
}
