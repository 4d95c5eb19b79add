import Foundation
import OrchardCore

/// The guard's records: made what configuration and the registry watch, leased by due time, and
/// written by a compare-and-set on their version, with the events that report the change.
extension SQLiteStore {
    static let guardColumns = """
        merchant, kind, target, state, stage, detail, expires_at, checked_at, first_failure_at, changed_at, failures, repairs,
        next_check_at, version
        """

    public func syncGuardSubjects(_ subjects: Set<GuardSubject>, at date: Date) async throws {
        try await database.run { db in
            var kept: Set<GuardSubject> = []
            for row in try db.query("SELECT merchant, kind, target FROM guard_records") {
                let (merchant, kind, target) = (row.text("merchant"), row.text("kind"), row.text("target"))
                let subject = GuardCheckKind(rawValue: kind).map { GuardSubject(merchantIdentifier: merchant, kind: $0, target: target) }
                if let subject, subjects.contains(subject) {
                    kept.insert(subject)
                } else {
                    try db.execute("DELETE FROM guard_records WHERE merchant = \(merchant) AND kind = \(kind) AND target = \(target)")
                }
            }
            for subject in subjects.subtracting(kept) {
                try Self.insertGuardRecord(GuardRecord(subject: subject, nextCheckAt: date), in: db)
            }
        }
    }

    public func leaseGuardChecks(at date: Date, until leaseEnd: Date, limit: Int) async throws -> [GuardRecord] {
        try await database.run { db in
            // The writer runs one transaction at a time: what this one reads, no other leases meanwhile.
            let due = try db.query(
                """
                SELECT \(unescaped: Self.guardColumns) FROM guard_records WHERE next_check_at <= \(date)
                ORDER BY next_check_at, merchant, kind, target LIMIT \(max(limit, 0))
                """
            ).compactMap(Self.guardRecord)
            return try due.map { record in
                try db.execute(
                    """
                    UPDATE guard_records SET next_check_at = \(leaseEnd), version = version + 1
                    WHERE \(Self.guardKey(record.subject))
                    """)
                var leased = record
                leased.nextCheckAt = Self.stored(leaseEnd)
                leased.version += 1
                return leased
            }
        }
    }

    public func recordGuardCheck(_ record: GuardRecord, events: [WebhookEvent]) async throws -> Bool {
        try await database.run { db in
            let written = try db.execute(
                """
                UPDATE guard_records SET state = \(record.state), stage = \(record.stage), detail = \(record.detail),
                expires_at = \(record.expiresAt), checked_at = \(record.checkedAt), first_failure_at = \(record.firstFailureAt),
                changed_at = \(record.changedAt), failures = \(record.failures), repairs = \(record.repairs),
                next_check_at = \(record.nextCheckAt), version = version + 1
                WHERE \(Self.guardKey(record.subject)) AND version = \(record.version)
                """)
            guard written == 1 else { return false }
            for event in events { try Self.insertEvent(in: db, event) }
            return true
        }
    }

    public func guardRecords(merchantIdentifier: String?) async throws -> [GuardRecord] {
        // The primary key's order, BINARY collation: byte order, as the in-memory store sorts.
        let filter: SQLiteStatement = merchantIdentifier.map { "WHERE merchant = \($0)" } ?? ""
        return try await rows("SELECT \(unescaped: Self.guardColumns) FROM guard_records \(filter) ORDER BY merchant, kind, target")
            .compactMap(Self.guardRecord)
    }

    static func guardKey(_ subject: GuardSubject) -> SQLiteStatement {
        "merchant = \(subject.merchantIdentifier) AND kind = \(subject.kind) AND target = \(subject.target)"
    }

    static func insertGuardRecord(_ record: GuardRecord, in db: SQLiteDatabase) throws {
        try db.execute(
            """
            INSERT INTO guard_records (\(unescaped: guardColumns)) VALUES (
            \(record.subject.merchantIdentifier), \(record.subject.kind), \(record.subject.target), \(record.state), \(record.stage),
            \(record.detail), \(record.expiresAt), \(record.checkedAt), \(record.firstFailureAt), \(record.changedAt),
            \(record.failures), \(record.repairs), \(record.nextCheckAt), \(record.version))
            """)
    }

    /// Nil for a kind of check this Orchard does not know (the next sync deletes the row).
    static func guardRecord(_ row: SQLiteRow) -> GuardRecord? {
        guard let kind: GuardCheckKind = row.value("kind") else { return nil }
        return GuardRecord(
            subject: GuardSubject(merchantIdentifier: row.text("merchant"), kind: kind, target: row.text("target")),
            state: row.value("state") ?? .pending, stage: row.int("stage"), detail: row.text("detail"),
            expiresAt: row.optionalDate("expires_at"), checkedAt: row.optionalDate("checked_at"),
            firstFailureAt: row.optionalDate("first_failure_at"), changedAt: row.optionalDate("changed_at"), failures: row.int("failures"),
            repairs: row.int("repairs"), nextCheckAt: row.date("next_check_at"), version: row.int("version"))
    }
}
