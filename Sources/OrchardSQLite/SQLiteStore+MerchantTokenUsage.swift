import Foundation
import OrchardCore

/// Usage keys (one current per merchant, by a partial unique index) and usage announcements,
/// leased by due time and written by compare-and-set on their version.
extension SQLiteStore {
    static let usageColumns = """
        merchant, merchant_token_id, state, due_at, attempts, token_hash, previous_token_hash, token_public_key, key_id, \
        announced_at, expires_at, last_error, version
        """

    public func currentUsageKey(merchantIdentifier: String) async throws -> UsageKeyRecord? {
        try await rows(
            "SELECT id, merchant, sealed, created_at, retired_at FROM usage_keys WHERE merchant = \(merchantIdentifier) AND retired_at IS NULL"
        )
        .first.map { row in
            UsageKeyRecord(
                id: row.text("id"), merchantIdentifier: row.text("merchant"), sealed: row.blob("sealed"), createdAt: row.date("created_at"),
                retiredAt: row.optionalDate("retired_at"))
        }
    }

    public func addUsageKey(_ key: UsageKeyRecord, replacing: String?) async throws -> Bool {
        try await database.run { db in
            let current = try db.query("SELECT id FROM usage_keys WHERE merchant = \(key.merchantIdentifier) AND retired_at IS NULL")
                .first?.text("id")
            guard current == replacing else { return false }
            try db.execute(
                "UPDATE usage_keys SET retired_at = \(key.createdAt) WHERE merchant = \(key.merchantIdentifier) AND retired_at IS NULL")
            try db.execute(
                """
                INSERT INTO usage_keys (id, merchant, sealed, created_at, retired_at)
                VALUES (\(key.id), \(key.merchantIdentifier), \(key.sealed), \(key.createdAt), NULL)
                """)
            return true
        }
    }

    public func markUsageDue(merchantIdentifier: String, merchantTokenIdentifier: String, at date: Date) async throws {
        _ = try await write(
            """
            INSERT INTO usage_announcements (merchant, merchant_token_id, state, due_at, attempts, version)
            VALUES (\(merchantIdentifier), \(merchantTokenIdentifier), 'pending', \(date), 0, 1)
            ON CONFLICT (merchant, merchant_token_id) DO UPDATE SET state = 'pending',
            due_at = MIN(COALESCE(due_at, excluded.due_at), excluded.due_at), version = version + 1
            """)
    }

    public func markAllUsageDue(merchantIdentifier: String, at date: Date) async throws -> Int {
        try await write(
            """
            UPDATE usage_announcements SET state = 'pending', due_at = MIN(COALESCE(due_at, \(date)), \(date)), version = version + 1
            WHERE merchant = \(merchantIdentifier) AND state <> 'retired'
            """)
    }

    public func scheduleUsageAnnouncements(merchantIdentifiers: [String], at date: Date, limit: Int) async throws -> Int {
        guard !merchantIdentifiers.isEmpty else { return 0 }
        let list = try Self.json(merchantIdentifiers)
        return try await write(
            """
            INSERT OR IGNORE INTO usage_announcements (merchant, merchant_token_id, state, due_at, attempts, version)
            SELECT DISTINCT m.merchant, m.merchant_token_id, 'pending', \(date), 0, 1 FROM mandates m
            WHERE m.state = 'active' AND m.merchant_token_id IS NOT NULL AND m.merchant IN (SELECT value FROM json_each(\(list)))
            AND NOT EXISTS (SELECT 1 FROM usage_announcements a WHERE a.merchant = m.merchant AND a.merchant_token_id = m.merchant_token_id)
            LIMIT \(limit)
            """)
    }

    public func leaseUsageAnnouncements(at date: Date, until leaseEnd: Date, limit: Int) async throws -> [UsageAnnouncement] {
        try await database.run { db in
            let due = try db.query(
                """
                SELECT \(unescaped: Self.usageColumns) FROM usage_announcements
                WHERE due_at IS NOT NULL AND due_at <= \(date) ORDER BY due_at, merchant, merchant_token_id LIMIT \(limit)
                """
            ).map(Self.usageAnnouncement)
            return try due.map { row in
                try db.execute(
                    """
                    UPDATE usage_announcements SET due_at = \(leaseEnd), version = version + 1
                    WHERE merchant = \(row.merchantIdentifier) AND merchant_token_id = \(row.merchantTokenIdentifier)
                    """)
                var leased = row
                leased.dueAt = Self.stored(leaseEnd)
                leased.version += 1
                return leased
            }
        }
    }

    public func recordUsageAnnouncement(_ row: UsageAnnouncement, expectedVersion: Int) async throws -> Bool {
        try await database.run { db in
            let stored = try db.query(
                """
                SELECT version FROM usage_announcements
                WHERE merchant = \(row.merchantIdentifier) AND merchant_token_id = \(row.merchantTokenIdentifier)
                """
            ).first?.int("version")
            guard let stored else { return false }
            let matched = stored == expectedVersion
            try db.execute(
                """
                UPDATE usage_announcements SET
                state = CASE WHEN \(matched) THEN \(row.state) ELSE state END,
                due_at = CASE WHEN \(matched) THEN \(row.dueAt) ELSE due_at END,
                attempts = \(row.attempts), token_hash = \(row.tokenHash), previous_token_hash = \(row.previousTokenHash),
                token_public_key = \(row.tokenPublicKey), key_id = \(row.keyId), announced_at = \(row.announcedAt),
                expires_at = \(row.expiresAt), last_error = \(row.lastError), version = version + 1
                WHERE merchant = \(row.merchantIdentifier) AND merchant_token_id = \(row.merchantTokenIdentifier)
                """)
            return matched
        }
    }

    public func usageAnnouncements(merchantTokenIdentifier: String) async throws -> [UsageAnnouncement] {
        try await rows(
            "SELECT \(unescaped: Self.usageColumns) FROM usage_announcements WHERE merchant_token_id = \(merchantTokenIdentifier) ORDER BY merchant"
        ).map(Self.usageAnnouncement)
    }

    static func usageAnnouncement(_ row: SQLiteRow) -> UsageAnnouncement {
        UsageAnnouncement(
            merchantIdentifier: row.text("merchant"), merchantTokenIdentifier: row.text("merchant_token_id"),
            state: UsageAnnouncement.State(rawValue: row.text("state")) ?? .pending, dueAt: row.optionalDate("due_at"),
            attempts: row.int("attempts"), tokenHash: row.optionalBlob("token_hash"),
            previousTokenHash: row.optionalBlob("previous_token_hash"),
            tokenPublicKey: row.optionalText("token_public_key"), keyId: row.optionalText("key_id"),
            announcedAt: row.optionalDate("announced_at"),
            expiresAt: row.optionalDate("expires_at"), lastError: row.optionalText("last_error"), version: row.int("version"))
    }
}
