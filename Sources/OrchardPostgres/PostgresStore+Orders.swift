import ApplePay
import Foundation
import OrchardCore
import PostgresNIO

/// Orders and registered merchants.
extension PostgresStore {
    static let orderColumns = "id, merchant, state, priced, application_data, created_at, expires_at, price_version"

    public func insert(_ order: OrderRecord) async throws {
        do {
            _ = try await rows(try Self.insertion(order))
        } catch let error as StoreError where error.code == .storage {
            throw StoreError(code: .storage, message: "order \(order.id) could not be stored: \(error.message)")
        }
    }

    /// The statement that writes a new order.
    static func insertion(_ order: OrderRecord) throws -> PostgresQuery {
        let priced = try json(order.priced)
        return """
            INSERT INTO orders (id, merchant, state, priced, application_data, created_at, expires_at, price_version)
            VALUES (\(order.id), \(order.merchantIdentifier), \(order.state.rawValue), \(priced), \(order.applicationData.bytea),
            \(order.createdAt), \(order.expiresAt), \(Int64(order.priceVersion)))
            """
    }

    public func order(id: String) async throws -> OrderRecord? {
        try await rows("SELECT \(unescaped: Self.orderColumns) FROM orders WHERE id = \(id)::text", prepared: Statements.OrderRead.self)
            .first
            .map(Self.order)
    }

    static func order(_ row: PostgresRandomAccessRow) throws -> OrderRecord {
        OrderRecord(
            id: try row.text("id"), merchantIdentifier: try row.text("merchant"),
            state: OrderRecord.State(rawValue: try row.text("state")) ?? .open,
            priced: try decode(PricedOrder.self, try row.text("priced")), applicationData: try row.bytes("application_data"),
            createdAt: try row.date("created_at"), expiresAt: try row.optionalDate("expires_at"),
            priceVersion: Int(try row.integer("price_version")))
    }

    public func updateOpen(_ order: OrderRecord) async throws {
        let priced = try Self.json(order.priced)
        try await transaction { connection in
            let row = try await connection.rows(
                "SELECT state, price_version FROM orders WHERE id = \(order.id) FOR UPDATE", self.logger
            ).first
            try OrderPricingPolicy.checkUpdate(
                order, found: try row.map { (OrderRecord.State(rawValue: try $0.text("state")), Int(try $0.integer("price_version"))) })
            _ = try await connection.rows(
                "UPDATE orders SET priced = \(priced), price_version = \(Int64(order.priceVersion)) WHERE id = \(order.id)", self.logger)
        }
    }

    // MARK: Registered merchants

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
        try await transaction { connection in
            try await connection.query(
                """
                INSERT INTO registered_merchants (partner_id, name, encrypt_to, merchant_url, created_at, updated_at)
                VALUES (\(merchant.partnerIdentifier), \(merchant.name), \(merchant.encryptTo), \(merchant.merchantUrl),
                \(merchant.createdAt), \(merchant.updatedAt))
                ON CONFLICT (partner_id) DO UPDATE SET name = excluded.name, encrypt_to = excluded.encrypt_to,
                merchant_url = excluded.merchant_url, updated_at = excluded.updated_at
                """, logger: logger)
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

    public func deleteRegistration(partnerIdentifier: String, at date: Date) async throws {
        let retired = RetiredTenant.recordKey(for: partnerIdentifier)
        try await transaction { connection in
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
    }

    // MARK: Registered merchants' settings

    public func sealedMerchantSettings() async throws -> [String: [UInt8]] {
        let settings = try await rows("SELECT partner_id, sealed FROM merchant_settings")
        return Dictionary(uniqueKeysWithValues: try settings.map { (try $0.text("partner_id"), try $0.bytes("sealed")) })
    }

    public func saveSealedMerchantSettings(partnerIdentifier: String, sealed: [UInt8], at date: Date) async throws {
        _ = try await rows(
            """
            INSERT INTO merchant_settings (partner_id, sealed, updated_at) VALUES (\(partnerIdentifier), \(sealed.bytea), \(date))
            ON CONFLICT (partner_id) DO UPDATE SET sealed = excluded.sealed, updated_at = excluded.updated_at
            """)
    }
}
