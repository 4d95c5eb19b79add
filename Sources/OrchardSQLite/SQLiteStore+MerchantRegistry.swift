import ApplePay
import Foundation
import OrchardCore

/// Registered merchants' sealed settings (the rest of the registry is in SQLiteStore.swift).
extension SQLiteStore {
    public func sealedMerchantSettings() async throws -> [String: [UInt8]] {
        let settings = try await rows("SELECT partner_id, sealed FROM merchant_settings")
        // Not uniqueKeysWithValues, which traps on a repeated key: SQLite lets a hand-edited table
        // hold several NULL keys, each read back as "".
        return Dictionary(settings.map { ($0.text("partner_id"), $0.blob("sealed")) }, uniquingKeysWith: { first, _ in first })
    }

    public func saveSealedMerchantSettings(partnerIdentifier: String, sealed: [UInt8], at date: Date) async throws {
        try await write(
            """
            INSERT INTO merchant_settings (partner_id, sealed, updated_at) VALUES (\(partnerIdentifier), \(sealed), \(date))
            ON CONFLICT(partner_id) DO UPDATE SET sealed = excluded.sealed, updated_at = excluded.updated_at
            """)
    }

    public func claimRegistration(partnerIdentifier: String, holder: String, until: Date, at now: Date) async throws -> RegistrationClaim {
        try await database.run { db in
            let claimed = try db.execute(
                """
                UPDATE registered_merchants SET claim = \(holder), claimed_until = \(until)
                WHERE partner_id = \(partnerIdentifier) AND (claim IS NULL OR claim = \(holder) OR claimed_until <= \(now))
                """)
            guard claimed == 0 else { return .claimed }
            return try db.query("SELECT 1 FROM registered_merchants WHERE partner_id = \(partnerIdentifier)").isEmpty ? .absent : .held
        }
    }

    public func releaseRegistration(partnerIdentifier: String, holder: String) async throws {
        try await write(
            "UPDATE registered_merchants SET claim = NULL, claimed_until = NULL WHERE partner_id = \(partnerIdentifier) AND claim = \(holder)"
        )
    }
}
