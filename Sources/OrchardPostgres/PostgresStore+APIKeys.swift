import ApplePay
import Foundation
import OrchardCore
import PostgresNIO

/// API keys: at most two active per merchant, revoked never deleted.
extension PostgresStore {
    public func insertAPIKey(_ key: APIKeyRecord) async throws {
        try await transaction { [self] connection in
            try await connection.query(
                "SELECT pg_advisory_xact_lock(\(LockSpace.merchantKeys.rawValue), hashtext(\(key.merchantIdentifier)))", logger: logger)
            let active =
                try await connection.rows(
                    "SELECT COUNT(*) AS n FROM api_keys WHERE merchant = \(key.merchantIdentifier) AND revoked_at IS NULL", logger
                ).first?.integer("n") ?? 0
            try APIKeyRecord.checkCap(adding: key, active: Int(active))
            try await connection.query(
                """
                INSERT INTO api_keys (id, merchant, secret_hash, created_at, revoked_at)
                VALUES (\(key.id), \(key.merchantIdentifier), \(key.secretHash.bytea), \(key.createdAt), NULL)
                """, logger: logger)
        }
    }

    public func apiKey(id: String) async throws -> APIKeyRecord? {
        try await apiKeys("WHERE id = \(id)").first
    }

    public func apiKeys(merchantIdentifier: String?) async throws -> [APIKeyRecord] {
        if let merchantIdentifier {
            return try await apiKeys("WHERE merchant = \(merchantIdentifier) ORDER BY created_at, seq")
        }
        return try await apiKeys("ORDER BY merchant, created_at, seq")
    }

    public func revokeAPIKey(id: String, at date: Date) async throws -> Bool {
        try await rows("UPDATE api_keys SET revoked_at = \(date) WHERE id = \(id) AND revoked_at IS NULL RETURNING id").count == 1
    }

    private func apiKeys(_ clause: PostgresQuery) async throws -> [APIKeyRecord] {
        try await rows(
            PostgresQuery(
                unsafeSQL: "SELECT id, merchant, secret_hash, created_at, revoked_at FROM api_keys " + clause.sql, binds: clause.binds)
        ).map { row in
            APIKeyRecord(
                id: try row.text("id"), merchantIdentifier: try row.text("merchant"), secretHash: try row.bytes("secret_hash"),
                createdAt: try row.date("created_at"), revokedAt: try row.optionalDate("revoked_at"))
        }
    }
}
