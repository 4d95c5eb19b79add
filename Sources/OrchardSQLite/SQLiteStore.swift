import ApplePay
import CSQLite
import Foundation
import OrchardCore

/// The SQLite store: one file in the state folder, created on first run.
public final class SQLiteStore: OrchardStore {
    let database: SQLiteDatabase

    public init(path: String) throws {
        database = try SQLiteDatabase(path: path)
        try database.execute(
            """
            CREATE TABLE IF NOT EXISTS orders (
                id TEXT PRIMARY KEY, merchant TEXT NOT NULL, state TEXT NOT NULL, priced TEXT NOT NULL,
                application_data BLOB NOT NULL, created_at INTEGER NOT NULL)
            """)
        try database.execute(
            """
            CREATE TABLE IF NOT EXISTS payments (
                id TEXT PRIMARY KEY, order_id TEXT NOT NULL REFERENCES orders(id), transaction_id TEXT NOT NULL UNIQUE,
                state TEXT NOT NULL, amount INTEGER NOT NULL, currency TEXT NOT NULL, network TEXT, last_four TEXT NOT NULL,
                processor_reference TEXT, created_at INTEGER NOT NULL)
            """)
        try Self.migratePayments(database)
        try Self.migrateShop(database)
        try Self.migrateMandates(database)
        try Self.migrateTokenEvents(database)
        try database.execute(
            """
            CREATE TABLE IF NOT EXISTS registered_merchants (
                partner_id TEXT PRIMARY KEY, name TEXT NOT NULL, encrypt_to TEXT NOT NULL, merchant_url TEXT,
                created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL)
            """)
        try database.execute(
            """
            CREATE TABLE IF NOT EXISTS registered_domains (
                domain TEXT PRIMARY KEY, partner_id TEXT NOT NULL REFERENCES registered_merchants(partner_id), position INTEGER NOT NULL)
            """)
    }

    public func insert(_ order: OrderRecord) async throws {
        let priced = try Self.encode(order.priced)
        try await database.run { db in try Self.insert(order, priced: priced, in: db) }
    }

    /// Writes a new order in the current transaction (`priced`: its pricing as stored).
    static func insert(_ order: OrderRecord, priced: String, in db: SQLiteDatabase) throws {
        try db.execute(
            """
            INSERT INTO orders (id, merchant, state, priced, application_data, created_at, expires_at, price_version)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?)
            """,
            [
                .text(order.id), .text(order.merchantIdentifier), .text(order.state.rawValue), .text(priced),
                .blob(order.applicationData), .time(order.createdAt), order.expiresAt.map(SQLiteValue.time) ?? .null,
                .integer(Int64(order.priceVersion)),
            ])
    }

    public func order(id: String) async throws -> OrderRecord? {
        let rows = try await database.read { db in
            try db.query(
                "SELECT id, merchant, state, priced, application_data, created_at, expires_at, price_version FROM orders WHERE id = ?",
                [.text(id)])
        }
        guard let row = rows.first, case .blob(let applicationData) = row[4] else { return nil }
        return OrderRecord(
            id: row[0].text ?? "", merchantIdentifier: row[1].text ?? "",
            state: OrderRecord.State(rawValue: row[2].text ?? "") ?? .open,
            priced: try JSONDecoder().decode(PricedOrder.self, from: Data((row[3].text ?? "").utf8)),
            applicationData: applicationData, createdAt: row[5].date,
            expiresAt: row[6].integer.map { Date(timeIntervalSince1970: TimeInterval($0)) }, priceVersion: Int(row[7].integer ?? 1))
    }

    public func updateOpen(_ order: OrderRecord) async throws {
        let priced = try Self.encode(order.priced)
        try await database.run { db in
            try db.transaction {
                let row = try db.query("SELECT state, price_version FROM orders WHERE id = ?", [.text(order.id)]).first
                try OrderPricingPolicy.checkUpdate(
                    order, found: row.map { (OrderRecord.State(rawValue: $0[0].text ?? ""), Int($0[1].integer ?? 1)) })
                try db.execute(
                    "UPDATE orders SET priced = ?, price_version = ? WHERE id = ?",
                    [.text(priced), .integer(Int64(order.priceVersion)), .text(order.id)])
            }
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
        for row in domains { byPartner[row[0].text ?? "", default: []].append(row[1].text ?? "") }
        return merchants.map { row in
            let id = row[0].text ?? ""
            return RegisteredMerchant(
                partnerIdentifier: id, name: row[1].text ?? "", encryptTo: row[2].text ?? "", merchantUrl: row[3].text,
                domains: byPartner[id] ?? [], createdAt: Date(timeIntervalSince1970: TimeInterval(row[4].integer ?? 0)),
                updatedAt: Date(timeIntervalSince1970: TimeInterval(row[5].integer ?? 0)))
        }
    }

    public func saveRegistration(_ merchant: RegisteredMerchant) async throws {
        try await database.run { db in
            try db.transaction {
                try db.execute(
                    """
                    INSERT INTO registered_merchants (partner_id, name, encrypt_to, merchant_url, created_at, updated_at)
                    VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT(partner_id) DO UPDATE SET
                    name = excluded.name, encrypt_to = excluded.encrypt_to, merchant_url = excluded.merchant_url,
                    updated_at = excluded.updated_at
                    """,
                    [
                        .text(merchant.partnerIdentifier), .text(merchant.name), .text(merchant.encryptTo),
                        merchant.merchantUrl.map(SQLiteValue.text) ?? .null, .integer(Int64(merchant.createdAt.timeIntervalSince1970)),
                        .integer(Int64(merchant.updatedAt.timeIntervalSince1970)),
                    ])
                try db.execute("DELETE FROM registered_domains WHERE partner_id = ?", [.text(merchant.partnerIdentifier)])
                for (position, domain) in merchant.domains.enumerated() {
                    do {
                        try db.execute(
                            "INSERT INTO registered_domains (domain, partner_id, position) VALUES (?, ?, ?)",
                            [.text(domain), .text(merchant.partnerIdentifier), .integer(Int64(position))])
                    } catch let failure as SQLiteDatabase.Failure where failure.isConstraint {
                        throw RegisteredMerchant.domainTaken(domain)
                    }
                }
            }
        }
    }

    public func deleteRegistration(partnerIdentifier: String, at date: Date) async throws {
        let id = SQLiteValue.text(partnerIdentifier)
        try await database.run { db in
            try db.transaction {
                try db.execute("DELETE FROM registered_domains WHERE partner_id = ?", [id])
                try db.execute("DELETE FROM registered_merchants WHERE partner_id = ?", [id])
                try db.execute("DELETE FROM merchant_settings WHERE partner_id = ?", [id])
                try db.execute("UPDATE api_keys SET revoked_at = ? WHERE merchant = ? AND revoked_at IS NULL", [.time(date), id])
                try db.execute(
                    "UPDATE webhook_events SET state = 'skipped', next_attempt_at = NULL, last_error = ? WHERE merchant = ? AND state = 'pending'",
                    [.text(RetiredTenant.skippedEventError), id])
            }
        }
    }

    static func encode(_ order: PricedOrder) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        return String(decoding: try encoder.encode(order), as: UTF8.self)
    }
}
