import ApplePay
import Foundation
import OrchardCore
import PostgresNIO

/// Registered merchants and their sealed settings.
extension PostgresStore {
    public func registeredMerchants() async throws -> [RegisteredMerchant] {
        let merchants = try await rows(
            "SELECT partner_id, name, encrypt_to, merchant_url, created_at, updated_at FROM registered_merchants ORDER BY partner_id")
        let domains = try await rows("SELECT partner_id, domain FROM registered_domains ORDER BY partner_id, position")
        var byPartner: [String: [String]] = [:]
        for row in domains { byPartner[try row.text("partner_id"), default: []].append(try row.text("domain")) }
        return try merchants.map { row in
            let id = try row.text("partner_id")
            return RegisteredMerchant(
                partnerIdentifier: id, name: try row.text("name"), encryptTo: try row.text("encrypt_to"),
                merchantUrl: try row.optionalText("merchant_url"), domains: byPartner[id] ?? [], createdAt: try row.date("created_at"),
                updatedAt: try row.date("updated_at"))
        }
    }

    public func saveRegistration(_ merchant: RegisteredMerchant) async throws {
        let id = merchant.partnerIdentifier
        try await transaction { [self] connection in
            let variants = try await connection.query(
                "SELECT partner_id FROM registered_merchants WHERE lower(partner_id) = lower(\(id)) AND partner_id <> \(id)", logger: logger
            ).collect()
            if let variant = variants.first {
                throw RegisteredMerchant.caseVariant(id, of: try variant.makeRandomAccess()[0].decode(String.self))
            }
            do {
                try await connection.query(
                    """
                    INSERT INTO registered_merchants (partner_id, name, encrypt_to, merchant_url, created_at, updated_at)
                    VALUES (\(id), \(merchant.name), \(merchant.encryptTo), \(merchant.merchantUrl),
                    \(merchant.createdAt), \(merchant.updatedAt))
                    ON CONFLICT (partner_id) DO UPDATE SET name = excluded.name, encrypt_to = excluded.encrypt_to,
                    merchant_url = excluded.merchant_url, updated_at = excluded.updated_at
                    """, logger: logger)
            } catch let error as PSQLError where error.sqlState == "23505" {
                // The lowered ID's index: a case variant committed after the read above (another instance).
                throw RegisteredMerchant.caseVariant(id, of: nil)
            }
            try await connection.query("DELETE FROM registered_domains WHERE partner_id = \(merchant.partnerIdentifier)", logger: logger)
            for (position, domain) in merchant.domains.enumerated() {
                do {
                    try await connection.query(
                        """
                        INSERT INTO registered_domains (domain, partner_id, position)
                        VALUES (\(domain), \(merchant.partnerIdentifier), \(Int32(position)))
                        """, logger: logger)
                } catch let error as PSQLError where error.sqlState == "23505" {
                    throw RegisteredMerchant.domainTaken(domain)
                }
            }
        }
    }

    @discardableResult
    public func deleteRegistration(partnerIdentifier: String, at date: Date) async throws -> String {
        let retired = RetiredTenant.recordKey(for: partnerIdentifier)
        try await transaction { [self] connection in
            try await connection.query("DELETE FROM registered_domains WHERE partner_id = \(partnerIdentifier)", logger: logger)
            try await connection.query("DELETE FROM registered_merchants WHERE partner_id = \(partnerIdentifier)", logger: logger)
            try await connection.query("DELETE FROM merchant_settings WHERE partner_id = \(partnerIdentifier)", logger: logger)
            try await connection.query(
                "UPDATE api_keys SET revoked_at = \(date) WHERE merchant = \(partnerIdentifier) AND revoked_at IS NULL", logger: logger)
            try await connection.query(
                """
                UPDATE webhook_events SET state = 'skipped', next_attempt_at = NULL, last_error = \(RetiredTenant.skippedEventError)
                WHERE merchant = \(partnerIdentifier) AND state = 'pending'
                """, logger: logger)
            for table in RetiredTenant.ownedTables {
                try await connection.query(
                    "UPDATE \(unescaped: table) SET merchant = \(retired) WHERE merchant = \(partnerIdentifier)", logger: logger)
            }
        }
        return retired
    }

    public func sealedMerchantSettings() async throws -> [String: [UInt8]] {
        let settings = try await rows("SELECT partner_id, sealed FROM merchant_settings")
        return Dictionary(try settings.map { (try $0.text("partner_id"), try $0.bytes("sealed")) }, uniquingKeysWith: { first, _ in first })
    }

    public func saveSealedMerchantSettings(partnerIdentifier: String, sealed: [UInt8], at date: Date) async throws {
        _ = try await rows(
            """
            INSERT INTO merchant_settings (partner_id, sealed, updated_at) VALUES (\(partnerIdentifier), \(sealed.bytea), \(date))
            ON CONFLICT (partner_id) DO UPDATE SET sealed = excluded.sealed, updated_at = excluded.updated_at
            """)
    }

    public func claimRegistration(partnerIdentifier: String, holder: String, until: Date, at now: Date) async throws -> RegistrationClaim {
        let claimed = try await rows(
            """
            UPDATE registered_merchants SET claim = \(holder), claimed_until = \(until)
            WHERE partner_id = \(partnerIdentifier) AND (claim IS NULL OR claim = \(holder) OR claimed_until <= \(now))
            RETURNING partner_id
            """)
        guard claimed.isEmpty else { return .claimed }
        let found = try await rows("SELECT 1 FROM registered_merchants WHERE partner_id = \(partnerIdentifier)")
        return found.isEmpty ? .absent : .held
    }

    public func releaseRegistration(partnerIdentifier: String, holder: String) async throws {
        _ = try await rows(
            """
            UPDATE registered_merchants SET claim = NULL, claimed_until = NULL
            WHERE partner_id = \(partnerIdentifier) AND claim = \(holder)
            """)
    }
}
