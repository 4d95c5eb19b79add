import ApplePay
import Foundation
import OrchardCore

/// The webhook outbox: events are inserted in the transaction of the change they report.
extension SQLiteStore {
    static let eventColumns = """
        id, merchant, type, payload, created_at, state, attempts, next_attempt_at, last_status, last_error, delivered_at
        """

    static func migrateWebhooks(_ database: SQLiteDatabase) throws {
        try database.execute(
            """
            CREATE TABLE IF NOT EXISTS webhook_events (
                id TEXT PRIMARY KEY, merchant TEXT NOT NULL, type TEXT NOT NULL, payload BLOB NOT NULL, created_at INTEGER NOT NULL,
                state TEXT NOT NULL, attempts INTEGER NOT NULL, next_attempt_at INTEGER, last_status INTEGER, last_error TEXT,
                delivered_at INTEGER)
            """)
        try database.execute("CREATE INDEX IF NOT EXISTS webhook_events_due ON webhook_events(state, next_attempt_at)")
    }

    static func insertEvent(in db: SQLiteDatabase, _ event: WebhookEvent) throws {
        try db.execute(
            "INSERT INTO webhook_events (\(eventColumns)) VALUES (\(placeholders(11)))",
            [
                .text(event.id), .text(event.merchantIdentifier), .text(event.type.rawValue), .blob(event.payload), .time(event.createdAt),
                .text(event.state.rawValue), .integer(Int64(event.attempts)), event.nextAttemptAt.map(SQLiteValue.time) ?? .null,
                event.lastStatus.map { .integer(Int64($0)) } ?? .null, event.lastError.map(SQLiteValue.text) ?? .null,
                event.deliveredAt.map(SQLiteValue.time) ?? .null,
            ])
    }

    /// The event about a payment as it stands inside the current transaction (`payment`, when the caller just read it).
    static func insertPaymentEvent(
        _ type: WebhookEventType, paymentId: String, payment: PaymentRecord? = nil, refund: RefundRecord? = nil, in db: SQLiteDatabase,
        at date: Date
    ) throws {
        guard
            let payment = try payment
                ?? db.query("SELECT \(paymentColumns) FROM payments WHERE id = ?", [.text(paymentId)]).first.map(Self.payment),
            let merchant = try db.query("SELECT merchant FROM orders WHERE id = ?", [.text(payment.orderId)]).first?[0].text
        else { return }
        // Only a settled payment has refunds: the sum is not looked up on the authorization path.
        let refunded =
            payment.state == .settled
            ? try db.query(
                "SELECT COALESCE(SUM(amount), 0) FROM refunds WHERE payment_id = ? AND state = 'refunded'", [.text(paymentId)]
            ).first?[0].integer ?? 0 : 0
        let request = try paymentRequest(in: db, id: payment.orderId)
        try insertEvent(
            in: db,
            try WebhookEvent.make(
                type, merchantIdentifier: merchant, payment: payment, request: request, refund: refund, refunded: refunded, at: date))
    }

    public func leaseWebhookEvents(at date: Date, until leaseEnd: Date, fairly lease: WebhookLease) async throws -> [WebhookEvent] {
        let excluded = String(decoding: try JSONEncoder().encode(lease.excluding.sorted()), as: UTF8.self)
        return try await database.run { db in
            try db.transaction {
                // Each merchant's due events numbered oldest first; the merchants whose first is
                // oldest are served, each with at most `perMerchant` of its own.
                let due = try db.query(
                    """
                    WITH due AS (
                        SELECT id, merchant, next_attempt_at, rowid AS seq,
                            ROW_NUMBER() OVER (PARTITION BY merchant ORDER BY next_attempt_at, rowid) AS position
                        FROM webhook_events
                        WHERE state = 'pending' AND next_attempt_at <= ? AND merchant NOT IN (SELECT value FROM json_each(?))),
                    chosen AS (SELECT merchant FROM due WHERE position = 1 ORDER BY next_attempt_at, seq LIMIT ?)
                    SELECT \(Self.eventColumns) FROM webhook_events WHERE id IN (
                        SELECT id FROM due WHERE position <= ? AND merchant IN (SELECT merchant FROM chosen)
                        ORDER BY next_attempt_at, seq LIMIT ?)
                    ORDER BY next_attempt_at, rowid
                    """,
                    [
                        .time(date), .text(excluded), .integer(Int64(lease.merchants)), .integer(Int64(lease.perMerchant)),
                        .integer(Int64(lease.total)),
                    ]
                ).map(Self.event)
                for event in due {
                    try db.execute("UPDATE webhook_events SET next_attempt_at = ? WHERE id = ?", [.time(leaseEnd), .text(event.id)])
                }
                return due.map { event in
                    var leased = event
                    leased.nextAttemptAt = SQLiteValue.time(leaseEnd).date
                    return leased
                }
            }
        }
    }

    public func recordDelivery(_ result: WebhookDeliveryResult) async throws -> Bool {
        try await database.run { db in
            try db.execute(
                """
                UPDATE webhook_events SET state = ?, attempts = attempts + 1, next_attempt_at = ?, last_status = ?, last_error = ?,
                delivered_at = CASE WHEN ? = 'delivered' THEN ? ELSE delivered_at END
                WHERE id = ? AND state = 'pending' AND attempts = ?
                """,
                [
                    .text(result.state.rawValue), result.nextAttemptAt.map(SQLiteValue.time) ?? .null,
                    result.status.map { .integer(Int64($0)) } ?? .null, result.error.map(SQLiteValue.text) ?? .null,
                    .text(result.state.rawValue), .time(result.at), .text(result.eventId), .integer(Int64(result.attempt)),
                ])
        } == 1
    }

    public func webhookEvents(merchantIdentifier: String?, state: WebhookEvent.DeliveryState?, limit: Int) async throws -> [WebhookEvent] {
        var conditions: [String] = []
        var parameters: [SQLiteValue] = []
        if let merchantIdentifier {
            conditions.append("merchant = ?")
            parameters.append(.text(merchantIdentifier))
        }
        if let state {
            conditions.append("state = ?")
            parameters.append(.text(state.rawValue))
        }
        let clause = conditions.isEmpty ? "" : "WHERE " + conditions.joined(separator: " AND ")
        return try await events("\(clause) ORDER BY created_at DESC, rowid DESC LIMIT ?", parameters + [.integer(Int64(limit))])
    }

    public func webhookEvent(id: String) async throws -> WebhookEvent? {
        try await events("WHERE id = ?", [.text(id)]).first
    }

    public func replayWebhookEvent(id: String, at date: Date) async throws -> Bool {
        try await database.run { db in
            try db.execute(
                "UPDATE webhook_events SET state = 'pending', next_attempt_at = ? WHERE id = ?", [.time(date), .text(id)])
        } == 1
    }

    private func events(_ clause: String, _ parameters: [SQLiteValue]) async throws -> [WebhookEvent] {
        try await database.read { db in
            try db.query("SELECT \(Self.eventColumns) FROM webhook_events \(clause)", parameters)
        }.map(Self.event)
    }

    static func event(_ row: [SQLiteValue]) -> WebhookEvent {
        WebhookEvent(
            id: row[0].text ?? "", merchantIdentifier: row[1].text ?? "",
            type: WebhookEventType(rawValue: row[2].text ?? "") ?? .paymentUnknown, payload: row[3].blob ?? [], createdAt: row[4].date,
            state: WebhookEvent.DeliveryState(rawValue: row[5].text ?? "") ?? .pending, attempts: Int(row[6].integer ?? 0),
            nextAttemptAt: row[7].integer.map { Date(timeIntervalSince1970: TimeInterval($0)) },
            lastStatus: row[8].integer.map { Int($0) }, lastError: row[9].text,
            deliveredAt: row[10].integer.map { Date(timeIntervalSince1970: TimeInterval($0)) })
    }
}
