import ApplePay
import Foundation
import OrchardCore

/// API keys: at most two active per merchant, revoked never deleted.
extension SQLiteStore {
    public func insertAPIKey(_ key: APIKeyRecord) async throws {
        try await database.run { db in
            let active =
                try db.query(
                    "SELECT COUNT(*) AS active FROM api_keys WHERE merchant = \(key.merchantIdentifier) AND revoked_at IS NULL"
                ).first?.int("active") ?? 0
            try APIKeyRecord.checkCap(adding: key, active: active)
            try db.execute(
                """
                INSERT INTO api_keys (id, merchant, secret_hash, created_at, revoked_at)
                VALUES (\(key.id), \(key.merchantIdentifier), \(key.secretHash), \(key.createdAt), NULL)
                """)
        }
    }

    public func apiKey(id: String) async throws -> APIKeyRecord? {
        try await apiKeys("WHERE id = \(id)").first
    }

    public func apiKeys(merchantIdentifier: String?) async throws -> [APIKeyRecord] {
        if let merchantIdentifier {
            return try await apiKeys("WHERE merchant = \(merchantIdentifier) ORDER BY created_at, rowid")
        }
        return try await apiKeys("ORDER BY merchant, created_at, rowid")
    }

    public func revokeAPIKey(id: String, at date: Date) async throws -> Bool {
        try await write("UPDATE api_keys SET revoked_at = \(date) WHERE id = \(id) AND revoked_at IS NULL") == 1
    }

    private func apiKeys(_ clause: SQLiteStatement) async throws -> [APIKeyRecord] {
        try await rows("SELECT id, merchant, secret_hash, created_at, revoked_at FROM api_keys \(clause)").map { row in
            APIKeyRecord(
                id: row.text("id"), merchantIdentifier: row.text("merchant"), secretHash: row.blob("secret_hash"),
                createdAt: row.date("created_at"), revokedAt: row.optionalDate("revoked_at"))
        }
    }
}
