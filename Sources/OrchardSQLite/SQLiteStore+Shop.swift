import ApplePay
import Foundation
import OrchardCore

/// API keys, payment requests and refunds.
extension SQLiteStore {
    static func migrateShop(_ database: SQLiteDatabase) throws {
        let orderColumns = Set(try database.query("PRAGMA table_info(orders)").compactMap { $0[1].text })
        if !orderColumns.contains("expires_at") {
            try database.execute("ALTER TABLE orders ADD COLUMN expires_at INTEGER")
        }
        if !orderColumns.contains("price_version") {
            try database.execute("ALTER TABLE orders ADD COLUMN price_version INTEGER NOT NULL DEFAULT 1")
        }
        try database.execute("CREATE INDEX IF NOT EXISTS orders_by_expiry ON orders(state, expires_at)")
        try database.execute(
            """
            CREATE TABLE IF NOT EXISTS api_keys (
                id TEXT PRIMARY KEY, merchant TEXT NOT NULL, secret_hash BLOB NOT NULL, created_at INTEGER NOT NULL,
                revoked_at INTEGER)
            """)
        try database.execute(
            """
            CREATE TABLE IF NOT EXISTS payment_requests (
                id TEXT PRIMARY KEY REFERENCES orders(id), merchant TEXT NOT NULL, reference TEXT NOT NULL, metadata TEXT NOT NULL,
                cart TEXT NOT NULL, idempotency_key TEXT NOT NULL, fingerprint BLOB NOT NULL, expires_at INTEGER NOT NULL,
                created_at INTEGER NOT NULL, UNIQUE (merchant, idempotency_key))
            """)
        try database.execute(
            """
            CREATE TABLE IF NOT EXISTS refunds (
                id TEXT PRIMARY KEY, payment_id TEXT NOT NULL REFERENCES payments(id), amount INTEGER NOT NULL,
                currency TEXT NOT NULL, state TEXT NOT NULL, reference TEXT NOT NULL UNIQUE, idempotency_key TEXT NOT NULL,
                sends INTEGER NOT NULL, processor_reference TEXT, processor_code TEXT, processor_message TEXT,
                created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL, UNIQUE (payment_id, idempotency_key))
            """)
        try database.execute("CREATE INDEX IF NOT EXISTS refunds_by_state ON refunds(state, updated_at)")
        // Until when a reconciler holds the refund (another process passes it by); added in place.
        let refundColumns = Set(try database.query("PRAGMA table_info(refunds)").compactMap { $0[1].text })
        if !refundColumns.contains("leased_until") {
            try database.execute("ALTER TABLE refunds ADD COLUMN leased_until INTEGER")
        }
        // When the refund's reference was last sent; added in place (older rows read their last change).
        if !refundColumns.contains("last_sent_at") {
            try database.execute("ALTER TABLE refunds ADD COLUMN last_sent_at INTEGER")
        }
        try database.execute(
            "CREATE TABLE IF NOT EXISTS merchant_settings (partner_id TEXT PRIMARY KEY, sealed BLOB NOT NULL, updated_at INTEGER NOT NULL)")
        try migrateWebhooks(database)
    }

    public func sealedMerchantSettings() async throws -> [String: [UInt8]] {
        let rows = try await database.read { db in try db.query("SELECT partner_id, sealed FROM merchant_settings") }
        return Dictionary(uniqueKeysWithValues: rows.map { ($0[0].text ?? "", $0[1].blob ?? []) })
    }

    public func saveSealedMerchantSettings(partnerIdentifier: String, sealed: [UInt8], at date: Date) async throws {
        try await database.run { db in
            try db.execute(
                """
                INSERT INTO merchant_settings (partner_id, sealed, updated_at) VALUES (?, ?, ?)
                ON CONFLICT(partner_id) DO UPDATE SET sealed = excluded.sealed, updated_at = excluded.updated_at
                """, [.text(partnerIdentifier), .blob(sealed), .time(date)])
        }
    }

    // MARK: API keys

    public func insertAPIKey(_ key: APIKeyRecord) async throws {
        try await database.run { db in
            try db.transaction {
                let active =
                    try db.query(
                        "SELECT COUNT(*) FROM api_keys WHERE merchant = ? AND revoked_at IS NULL", [.text(key.merchantIdentifier)]
                    ).first?[0].integer ?? 0
                try APIKeyRecord.checkCap(adding: key, active: Int(active))
                try db.execute(
                    "INSERT INTO api_keys (id, merchant, secret_hash, created_at, revoked_at) VALUES (?, ?, ?, ?, NULL)",
                    [.text(key.id), .text(key.merchantIdentifier), .blob(key.secretHash), .time(key.createdAt)])
            }
        }
    }

    public func apiKey(id: String) async throws -> APIKeyRecord? {
        try await apiKeys(where: "WHERE id = ?", [.text(id)]).first
    }

    public func apiKeys(merchantIdentifier: String?) async throws -> [APIKeyRecord] {
        if let merchantIdentifier {
            return try await apiKeys(where: "WHERE merchant = ? ORDER BY created_at, rowid", [.text(merchantIdentifier)])
        }
        return try await apiKeys(where: "ORDER BY merchant, created_at, rowid", [])
    }

    public func revokeAPIKey(id: String, at date: Date) async throws -> Bool {
        try await database.run { db in
            try db.execute("UPDATE api_keys SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL", [.time(date), .text(id)])
        } == 1
    }

    private func apiKeys(where clause: String, _ parameters: [SQLiteValue]) async throws -> [APIKeyRecord] {
        try await database.read { db in
            try db.query("SELECT id, merchant, secret_hash, created_at, revoked_at FROM api_keys \(clause)", parameters)
        }.map { row in
            APIKeyRecord(
                id: row[0].text ?? "", merchantIdentifier: row[1].text ?? "", secretHash: row[2].blob ?? [], createdAt: row[3].date,
                revokedAt: row[4].integer.map { Date(timeIntervalSince1970: TimeInterval($0)) })
        }
    }

    // MARK: Payment requests

    static let requestColumns = "id, merchant, reference, metadata, cart, idempotency_key, fingerprint, expires_at, created_at"

    public func createPaymentRequest(_ request: PaymentRequestRecord, order: OrderRecord) async throws -> (
        record: PaymentRequestRecord, created: Bool
    ) {
        let metadata = try Self.json(request.metadata)
        let cart = try Self.json(request.cart)
        let priced = try Self.encode(order.priced)
        return try await database.run { db in
            try db.transaction {
                let earlier = try db.query(
                    "SELECT \(Self.requestColumns) FROM payment_requests WHERE merchant = ? AND idempotency_key = ?",
                    [.text(request.merchantIdentifier), .text(request.idempotencyKey)]
                ).first.map(Self.paymentRequest)
                if let earlier {
                    return (try earlier.replay(for: request), false)
                }
                try Self.insert(order, priced: priced, in: db)
                try db.execute(
                    "INSERT INTO payment_requests (\(Self.requestColumns)) VALUES (\(Self.placeholders(9)))",
                    [
                        .text(request.id), .text(request.merchantIdentifier), .text(request.reference), .text(metadata), .text(cart),
                        .text(request.idempotencyKey), .blob(request.fingerprint), .time(request.expiresAt), .time(request.createdAt),
                    ])
                return (request, true)
            }
        }
    }

    public func paymentRequest(id: String) async throws -> PaymentRequestRecord? {
        try await database.read { db in
            try db.query("SELECT \(Self.requestColumns) FROM payment_requests WHERE id = ?", [.text(id)]).first.map(Self.paymentRequest)
        }
    }

    public func expireOrders(at date: Date, limit: Int) async throws -> [String] {
        try await database.run { db in
            try db.transaction {
                let due = try db.query(
                    "SELECT id, merchant FROM orders WHERE state = 'open' AND expires_at IS NOT NULL AND expires_at <= ? LIMIT ?",
                    [.time(date), .integer(Int64(limit))])
                var expired: [String] = []
                for row in due {
                    let id = row[0].text ?? ""
                    guard try db.execute("UPDATE orders SET state = 'expired' WHERE id = ? AND state = 'open'", [.text(id)]) == 1 else {
                        continue
                    }
                    // A checkout-page order has no payment request, and the shop no event to hear.
                    if let request = try Self.paymentRequest(in: db, id: id) {
                        try Self.insertEvent(
                            in: db,
                            try WebhookEvent.make(
                                .paymentRequestExpired, merchantIdentifier: row[1].text ?? "", payment: nil, request: request, at: date))
                    }
                    expired.append(id)
                }
                return expired
            }
        }
    }

    static func paymentRequest(in db: SQLiteDatabase, id: String) throws -> PaymentRequestRecord? {
        try db.query("SELECT \(requestColumns) FROM payment_requests WHERE id = ?", [.text(id)]).first.map(paymentRequest)
    }

    static func paymentRequest(_ row: [SQLiteValue]) -> PaymentRequestRecord {
        PaymentRequestRecord(
            id: row[0].text ?? "", merchantIdentifier: row[1].text ?? "", reference: row[2].text ?? "",
            metadata: (try? JSONDecoder().decode([String: String].self, from: Data((row[3].text ?? "{}").utf8))) ?? [:],
            cart: (try? JSONDecoder().decode(ShopCart.self, from: Data((row[4].text ?? "").utf8)))
                ?? ShopCart(currency: "", countryCode: "", amount: 0),
            idempotencyKey: row[5].text ?? "", fingerprint: row[6].blob ?? [], expiresAt: row[7].date, createdAt: row[8].date)
    }

    static func json(_ value: some Encodable) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        return String(decoding: try encoder.encode(value), as: UTF8.self)
    }
}

extension SQLiteValue {
    static func time(_ date: Date) -> SQLiteValue { .integer(Int64(date.timeIntervalSince1970)) }
    var blob: [UInt8]? { if case .blob(let v) = self { v } else { nil } }
    var date: Date { Date(timeIntervalSince1970: TimeInterval(integer ?? 0)) }
}
