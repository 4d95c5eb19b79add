import ApplePay
import CSQLite
import Foundation
import OrchardCore

/// The SQLite store: one file in the state folder, created on first run.
public final class SQLiteStore: OrchardStore {
    let database: SQLiteDatabase

    public init(path: String) throws {
        database = try SQLiteDatabase(path: path)
        try Self.migrate(database)
    }

    /// A store on a database opened as it is (``existing(path:)``).
    init(database: SQLiteDatabase) {
        self.database = database
    }

    /// One statement as a transaction of its own; how many rows it changed.
    @discardableResult
    func write(_ statement: SQLiteStatement) async throws -> Int {
        try await database.run { db in try db.execute(statement) }
    }

    /// The rows of one query, as of the last commit.
    func rows(_ statement: SQLiteStatement) async throws -> [SQLiteRow] {
        try await database.read { db in try db.query(statement) }
    }

    public func insert(_ order: OrderRecord) async throws {
        let priced = try Self.json(order.priced)
        try await database.run { db in try Self.insert(order, priced: priced, in: db) }
    }

    /// Writes a new order in the current transaction (`priced`: its pricing as stored).
    static func insert(_ order: OrderRecord, priced: String, in db: SQLiteDatabase) throws {
        try db.execute(
            """
            INSERT INTO orders (id, merchant, state, priced, application_data, created_at, expires_at, price_version)
            VALUES (\(order.id), \(order.merchantIdentifier), \(order.state), \(priced), \(order.applicationData), \(order.createdAt),
            \(order.expiresAt), \(order.priceVersion))
            """)
    }

    public func order(id: String) async throws -> OrderRecord? {
        let found = try await rows(
            "SELECT id, merchant, state, priced, application_data, created_at, expires_at, price_version FROM orders WHERE id = \(id)")
        guard let row = found.first, let applicationData = row.optionalBlob("application_data") else { return nil }
        return OrderRecord(
            id: row.text("id"), merchantIdentifier: row.text("merchant"), state: row.value("state") ?? .open,
            priced: try JSONDecoder().decode(PricedOrder.self, from: Data(row.text("priced").utf8)), applicationData: applicationData,
            createdAt: row.date("created_at"), expiresAt: row.optionalDate("expires_at"), priceVersion: row.int("price_version"))
    }

    public func updateOpen(_ order: OrderRecord) async throws {
        let priced = try Self.json(order.priced)
        try await database.run { db in
            let row = try db.query("SELECT state, price_version FROM orders WHERE id = \(order.id)").first
            try OrderPricingPolicy.checkUpdate(order, found: row.map { ($0.value("state"), $0.int("price_version")) })
            try db.execute("UPDATE orders SET priced = \(priced), price_version = \(order.priceVersion) WHERE id = \(order.id)")
        }
    }

    public func registeredMerchants() async throws -> [RegisteredMerchant] {
        let (merchants, domains) = try await database.read { db in
            (
                try db.query(
                    "SELECT partner_id, name, encrypt_to, merchant_url, created_at, updated_at FROM registered_merchants ORDER BY partner_id"
                ),
                try db.query("SELECT partner_id, domain FROM registered_domains ORDER BY partner_id, position")
            )
        }
        var byPartner: [String: [String]] = [:]
        for row in domains { byPartner[row.text("partner_id"), default: []].append(row.text("domain")) }
        return merchants.map { row in
            RegisteredMerchant(
                partnerIdentifier: row.text("partner_id"), name: row.text("name"), encryptTo: row.text("encrypt_to"),
                merchantUrl: row.optionalText("merchant_url"), domains: byPartner[row.text("partner_id")] ?? [],
                createdAt: row.date("created_at"), updatedAt: row.date("updated_at"))
        }
    }

    public func saveRegistration(_ merchant: RegisteredMerchant) async throws {
        let id = merchant.partnerIdentifier
        try await database.run { db in
            do {
                try db.execute(
                    """
                    INSERT INTO registered_merchants (partner_id, name, encrypt_to, merchant_url, created_at, updated_at)
                    VALUES (\(id), \(merchant.name), \(merchant.encryptTo), \(merchant.merchantUrl), \(merchant.createdAt), \(merchant.updatedAt))
                    ON CONFLICT(partner_id) DO UPDATE SET name = excluded.name, encrypt_to = excluded.encrypt_to,
                    merchant_url = excluded.merchant_url, updated_at = excluded.updated_at
                    """)
            } catch let failure as SQLiteDatabase.Failure where failure.isConstraint {
                // The lowered ID's index: another merchant holds this ID in other letter case.
                let variant = try db.query(
                    "SELECT partner_id FROM registered_merchants WHERE lower(partner_id) = lower(\(id)) AND partner_id <> \(id)")
                throw RegisteredMerchant.caseVariant(id, of: variant.first?.text("partner_id"))
            }
            try db.execute("DELETE FROM registered_domains WHERE partner_id = \(id)")
            for (position, domain) in merchant.domains.enumerated() {
                do {
                    try db.execute("INSERT INTO registered_domains (domain, partner_id, position) VALUES (\(domain), \(id), \(position))")
                } catch let failure as SQLiteDatabase.Failure where failure.isConstraint {
                    throw RegisteredMerchant.domainTaken(domain)
                }
            }
        }
    }

    @discardableResult
    public func deleteRegistration(partnerIdentifier id: String, at date: Date) async throws -> String {
        let retired = RetiredTenant.recordKey(for: id)
        try await database.run { db in
            try db.execute("DELETE FROM registered_domains WHERE partner_id = \(id)")
            try db.execute("DELETE FROM registered_merchants WHERE partner_id = \(id)")
            try db.execute("DELETE FROM merchant_settings WHERE partner_id = \(id)")
            try db.execute("UPDATE api_keys SET revoked_at = \(date) WHERE merchant = \(id) AND revoked_at IS NULL")
            try db.execute(
                """
                UPDATE webhook_events SET state = 'skipped', next_attempt_at = NULL, last_error = \(RetiredTenant.skippedEventError)
                WHERE merchant = \(id) AND state = 'pending'
                """)
            for table in RetiredTenant.ownedTables {
                try db.execute("UPDATE \(unescaped: table) SET merchant = \(retired) WHERE merchant = \(id)")
            }
        }
        return retired
    }

    /// JSON with sorted keys, as every JSON column is stored.
    static func json(_ value: some Encodable) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        return String(decoding: try encoder.encode(value), as: UTF8.self)
    }

    /// `date` as the store keeps it: whole seconds.
    static func stored(_ date: Date) -> Date { Date(timeIntervalSince1970: TimeInterval(Int64(date.timeIntervalSince1970))) }
}
