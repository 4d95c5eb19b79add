import Foundation
import OrchardCore
import PostgresNIO

/// Usage keys (one current per merchant, by a partial unique index) and usage announcements,
/// leased with `FOR UPDATE SKIP LOCKED` and written by compare-and-set on their version.
extension PostgresStore {
    static let usageColumns = """
        merchant, merchant_token_id, state, due_at, attempts, token_hash, previous_token_hash, token_public_key, key_id, \
        announced_at, expires_at, last_error, version
        """

    public func currentUsageKey(merchantIdentifier: String) async throws -> UsageKeyRecord? {
        try await rows(
            "SELECT id, merchant, sealed, created_at, retired_at FROM usage_keys WHERE merchant = \(merchantIdentifier) AND retired_at IS NULL"
        ).first.map { row in
            UsageKeyRecord(
                id: try row.text("id"), merchantIdentifier: try row.text("merchant"), sealed: try row.bytes("sealed"),
                createdAt: try row.date("created_at"), retiredAt: try row.optionalDate("retired_at"))
        }
    }

    public func addUsageKey(_ key: UsageKeyRecord, replacing: String?) async throws -> Bool {
        do {
            return try await transaction { [self] connection in
                let current = try await connection.rows(
                    "SELECT id FROM usage_keys WHERE merchant = \(key.merchantIdentifier) AND retired_at IS NULL FOR UPDATE", logger
                ).first.map { try $0.text("id") }
                guard current == replacing else { return false }
                try await connection.query(
                    "UPDATE usage_keys SET retired_at = \(key.createdAt) WHERE merchant = \(key.merchantIdentifier) AND retired_at IS NULL",
                    logger: logger)
                try await connection.query(
                    """
                    INSERT INTO usage_keys (id, merchant, sealed, created_at)
                    VALUES (\(key.id), \(key.merchantIdentifier), \(key.sealed.bytea), \(key.createdAt))
                    """, logger: logger)
                return true
            }
        } catch let error as PSQLError where error.sqlState == "23505" {
            // Two instances made the first key at once: the index kept one.
            return false
        }
    }

    public func markUsageDue(merchantIdentifier: String, merchantTokenIdentifier: String, at date: Date) async throws {
        _ = try await rows(
            """
            INSERT INTO usage_announcements (merchant, merchant_token_id, state, due_at, attempts, version)
            VALUES (\(merchantIdentifier), \(merchantTokenIdentifier), 'pending', \(date), 0, 1)
            ON CONFLICT (merchant, merchant_token_id) DO UPDATE SET state = 'pending',
            due_at = LEAST(COALESCE(usage_announcements.due_at, excluded.due_at), excluded.due_at),
            version = usage_announcements.version + 1
            """)
    }

    public func markAllUsageDue(merchantIdentifier: String, at date: Date) async throws -> Int {
        try await rows(
            """
            UPDATE usage_announcements SET state = 'pending', due_at = LEAST(COALESCE(due_at, \(date)), \(date)), version = version + 1
            WHERE merchant = \(merchantIdentifier) AND state <> 'retired' RETURNING 1 AS one
            """
        ).count
    }

    public func scheduleUsageAnnouncements(merchantIdentifiers: [String], at date: Date, limit: Int) async throws -> Int {
        guard !merchantIdentifiers.isEmpty else { return 0 }
        return try await rows(
            """
            INSERT INTO usage_announcements (merchant, merchant_token_id, state, due_at, attempts, version)
            SELECT DISTINCT m.merchant, m.merchant_token_id, 'pending', \(date)::timestamptz, 0, 1 FROM mandates m
            WHERE m.state = 'active' AND m.merchant_token_id IS NOT NULL AND m.merchant = ANY(\(merchantIdentifiers))
            AND NOT EXISTS (SELECT 1 FROM usage_announcements a WHERE a.merchant = m.merchant AND a.merchant_token_id = m.merchant_token_id)
            LIMIT \(Int64(limit))
            ON CONFLICT (merchant, merchant_token_id) DO NOTHING RETURNING 1 AS one
            """
        ).count
    }

    public func leaseUsageAnnouncements(at date: Date, until leaseEnd: Date, limit: Int) async throws -> [UsageAnnouncement] {
        let leased = try await rows(
            """
            WITH due AS (
                SELECT merchant, merchant_token_id, due_at AS was_due FROM usage_announcements
                WHERE due_at IS NOT NULL AND due_at <= \(date)
                ORDER BY due_at, merchant, merchant_token_id LIMIT \(Int64(limit)) FOR UPDATE SKIP LOCKED)
            UPDATE usage_announcements a SET due_at = \(leaseEnd), version = a.version + 1 FROM due
            WHERE a.merchant = due.merchant AND a.merchant_token_id = due.merchant_token_id
            RETURNING \(unescaped: Self.qualified(Self.usageColumns, by: "a")), due.was_due
            """)
        return try leased.sorted {
            try ($0.date("was_due"), $0.text("merchant"), $0.text("merchant_token_id"))
                < ($1.date("was_due"), $1.text("merchant"), $1.text("merchant_token_id"))
        }.map(Self.usageAnnouncement)
    }

    public func recordUsageAnnouncement(_ row: UsageAnnouncement, expectedVersion: Int) async throws -> Bool {
        let expected = Int64(expectedVersion)
        let answer = try await rows(
            """
            WITH old AS (
                SELECT version FROM usage_announcements
                WHERE merchant = \(row.merchantIdentifier) AND merchant_token_id = \(row.merchantTokenIdentifier) FOR UPDATE)
            UPDATE usage_announcements a SET
            state = CASE WHEN old.version = \(expected) THEN \(row.state.rawValue) ELSE a.state END,
            due_at = CASE WHEN old.version = \(expected) THEN \(row.dueAt) ELSE a.due_at END,
            attempts = \(Int64(row.attempts)), token_hash = \(row.tokenHash?.bytea), previous_token_hash = \(row.previousTokenHash?.bytea),
            token_public_key = \(row.tokenPublicKey), key_id = \(row.keyId), announced_at = \(row.announcedAt),
            expires_at = \(row.expiresAt), last_error = \(row.lastError), version = a.version + 1
            FROM old WHERE a.merchant = \(row.merchantIdentifier) AND a.merchant_token_id = \(row.merchantTokenIdentifier)
            RETURNING old.version = \(expected) AS matched
            """)
        return try answer.first?.bool("matched") ?? false
    }

    public func usageAnnouncements(merchantTokenIdentifier: String) async throws -> [UsageAnnouncement] {
        try await rows(
            "SELECT \(unescaped: Self.usageColumns) FROM usage_announcements WHERE merchant_token_id = \(merchantTokenIdentifier) ORDER BY merchant"
        ).map(Self.usageAnnouncement)
    }

    static func usageAnnouncement(_ row: PostgresRandomAccessRow) throws -> UsageAnnouncement {
        UsageAnnouncement(
            merchantIdentifier: try row.text("merchant"), merchantTokenIdentifier: try row.text("merchant_token_id"),
            state: UsageAnnouncement.State(rawValue: try row.text("state")) ?? .pending, dueAt: try row.optionalDate("due_at"),
            attempts: Int(try row.integer("attempts")), tokenHash: try row.optionalBytes("token_hash"),
            previousTokenHash: try row.optionalBytes("previous_token_hash"), tokenPublicKey: try row.optionalText("token_public_key"),
            keyId: try row.optionalText("key_id"), announcedAt: try row.optionalDate("announced_at"),
            expiresAt: try row.optionalDate("expires_at"), lastError: try row.optionalText("last_error"),
            version: Int(try row.integer("version")))
    }
}
