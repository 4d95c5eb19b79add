import ApplePay
import Foundation
import OrchardCore

/// The webhook outbox: events are inserted in the transaction of the change they report.
extension SQLiteStore {
    static let eventColumns = """
        id, merchant, type, payload, created_at, state, attempts, next_attempt_at, last_status, last_error, delivered_at
        """

    static func insertEvent(in db: SQLiteDatabase, _ event: WebhookEvent) throws {
        try db.execute(
            """
            INSERT INTO webhook_events (\(unescaped: eventColumns)) VALUES (
            \(event.id), \(event.merchantIdentifier), \(event.type), \(event.payload), \(event.createdAt), \(event.state),
            \(event.attempts), \(event.nextAttemptAt), \(event.lastStatus), \(event.lastError), \(event.deliveredAt))
            """)
    }

    /// The event about a payment as it stands inside the current transaction (`payment`, when the caller just read it).
    static func insertPaymentEvent(
        _ type: WebhookEventType, paymentId: String, payment: PaymentRecord? = nil, refund: RefundRecord? = nil, in db: SQLiteDatabase,
        at date: Date
    ) throws {
        guard
            let payment = try payment
                ?? db.query("SELECT \(unescaped: paymentColumns) FROM payments WHERE id = \(paymentId)").first.map(Self.payment),
            let merchant = try db.query("SELECT merchant FROM orders WHERE id = \(payment.orderId)").first?.text("merchant")
        else { return }
        // Only a settled payment has refunds: the sum is not looked up on the authorization path.
        let refunded =
            payment.state == .settled
            ? try db.query(
                "SELECT COALESCE(SUM(amount), 0) AS refunded FROM refunds WHERE payment_id = \(paymentId) AND state = 'refunded'"
            ).first?.integer("refunded") ?? 0 : 0
        let request = try paymentRequest(in: db, id: payment.orderId)
        try insertEvent(
            in: db,
            try WebhookEvent.make(
                type, merchantIdentifier: merchant, payment: payment, request: request, refund: refund, refunded: refunded, at: date))
    }

    public func leaseWebhookEvents(at date: Date, until leaseEnd: Date, fairly lease: WebhookLease) async throws -> [WebhookEvent] {
        let excluded = String(decoding: try JSONEncoder().encode(lease.excluding.sorted()), as: UTF8.self)
        return try await database.run { db in
            // Each merchant's due events numbered oldest first; the merchants whose first is
            // oldest are served, each with at most `perMerchant` of its own.
            let due = try db.query(
                """
                WITH due AS (
                    SELECT id, merchant, next_attempt_at, rowid AS seq,
                        ROW_NUMBER() OVER (PARTITION BY merchant ORDER BY next_attempt_at, rowid) AS position
                    FROM webhook_events
                    WHERE state = 'pending' AND next_attempt_at <= \(date) AND merchant NOT IN (SELECT value FROM json_each(\(excluded)))),
                chosen AS (SELECT merchant FROM due WHERE position = 1 ORDER BY next_attempt_at, seq LIMIT \(lease.merchants))
                SELECT \(unescaped: Self.eventColumns) FROM webhook_events WHERE id IN (
                    SELECT id FROM due WHERE position <= \(lease.perMerchant) AND merchant IN (SELECT merchant FROM chosen)
                    ORDER BY next_attempt_at, seq LIMIT \(lease.total))
                ORDER BY next_attempt_at, rowid
                """
            ).map(Self.event)
            for event in due {
                try db.execute("UPDATE webhook_events SET next_attempt_at = \(leaseEnd) WHERE id = \(event.id)")
            }
            return due.map { event in
                var leased = event
                leased.nextAttemptAt = Self.stored(leaseEnd)
                return leased
            }
        }
    }

    public func recordDelivery(_ result: WebhookDeliveryResult) async throws -> Bool {
        try await write(
            """
            UPDATE webhook_events SET state = \(result.state), attempts = attempts + 1, next_attempt_at = \(result.nextAttemptAt),
            last_status = \(result.status), last_error = \(result.error),
            delivered_at = CASE WHEN \(result.state) = 'delivered' THEN \(result.at) ELSE delivered_at END
            WHERE id = \(result.eventId) AND state = 'pending' AND attempts = \(result.attempt)
            """) == 1
    }

    public func webhookEvents(merchantIdentifier: String?, state: WebhookEvent.DeliveryState?, limit: Int) async throws -> [WebhookEvent] {
        switch (merchantIdentifier, state) {
        case (let merchant?, let state?):
            try await events("WHERE merchant = \(merchant) AND state = \(state) ORDER BY created_at DESC, rowid DESC LIMIT \(limit)")
        case (let merchant?, nil): try await events("WHERE merchant = \(merchant) ORDER BY created_at DESC, rowid DESC LIMIT \(limit)")
        case (nil, let state?): try await events("WHERE state = \(state) ORDER BY created_at DESC, rowid DESC LIMIT \(limit)")
        case (nil, nil): try await events("ORDER BY created_at DESC, rowid DESC LIMIT \(limit)")
        }
    }

    public func webhookEvent(id: String) async throws -> WebhookEvent? {
        try await events("WHERE id = \(id)").first
    }

    public func replayWebhookEvent(id: String, at date: Date) async throws -> Bool {
        try await write("UPDATE webhook_events SET state = 'pending', next_attempt_at = \(date) WHERE id = \(id)") == 1
    }

    private func events(_ clause: SQLiteStatement) async throws -> [WebhookEvent] {
        try await rows("SELECT \(unescaped: Self.eventColumns) FROM webhook_events \(clause)").map(Self.event)
    }

    static func event(_ row: SQLiteRow) -> WebhookEvent {
        WebhookEvent(
            id: row.text("id"), merchantIdentifier: row.text("merchant"), type: row.value("type") ?? .paymentUnknown,
            payload: row.blob("payload"), createdAt: row.date("created_at"), state: row.value("state") ?? .pending,
            attempts: row.int("attempts"), nextAttemptAt: row.optionalDate("next_attempt_at"),
            lastStatus: row.optionalInteger("last_status").map { Int(truncatingIfNeeded: $0) }, lastError: row.optionalText("last_error"),
            deliveredAt: row.optionalDate("delivered_at"))
    }
}
