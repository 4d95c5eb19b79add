import ApplePay
import Foundation
import OrchardCore
import PostgresNIO

/// The webhook outbox: events are inserted in the transaction of the change they report, and
/// leased for delivery.
extension PostgresStore {
    static let eventColumns = """
        id, merchant, type, payload, created_at, state, attempts, next_attempt_at, last_status, last_error, delivered_at
        """

    func insertEvent(_ event: WebhookEvent, on connection: PostgresConnection) async throws {
        try await connection.query(
            """
            INSERT INTO webhook_events (\(unescaped: Self.eventColumns)) VALUES (
            \(event.id), \(event.merchantIdentifier), \(event.type.rawValue), \(event.payload.bytea), \(event.createdAt),
            \(event.state.rawValue), \(Int64(event.attempts)), \(event.nextAttemptAt), \(event.lastStatus.map { Int64($0) }),
            \(event.lastError), \(event.deliveredAt))
            """, logger: logger)
    }

    /// The event about `payment` as it stands inside the current transaction.
    func insertPaymentEvent(
        _ type: WebhookEventType, payment: PaymentRecord, merchant: String, refund: RefundRecord? = nil, on connection: PostgresConnection,
        at date: Date
    ) async throws {
        // Only a settled payment, or one whose amount a refund released, has refunds: the sum is
        // not looked up on the authorization path.
        let refunded =
            payment.state == .settled || refund?.released == true
            ? try await connection.rows(
                """
                SELECT COALESCE(SUM(amount), 0)::bigint AS refunded FROM refunds WHERE payment_id = \(payment.id) AND state = 'refunded'
                """, logger
            ).first?.integer("refunded") ?? 0 : 0
        let request = try await Self.paymentRequest(on: connection, id: payment.orderId, logger: logger)
        try await insertEvent(
            try WebhookEvent.make(
                type, merchantIdentifier: merchant, payment: payment, request: request, refund: refund, refunded: refunded, at: date),
            on: connection)
    }

    public func leaseWebhookEvents(at date: Date, until leaseEnd: Date, fairly lease: WebhookLease) async throws -> [WebhookEvent] {
        // The merchants with pending events by a skip scan of `webhook_events_pending`, each one's
        // oldest due event; the merchants whose first is oldest are served, each with its own
        // oldest `perMerchant`, read in index order. Numbering every due event instead read the
        // whole backlog on every poll of every instance. The lock re-checks the row is still due,
        // so two instances never lease the same event.
        let leased = try await rows(
            """
            WITH RECURSIVE merchants(merchant) AS (
                (SELECT merchant FROM webhook_events WHERE state = 'pending' ORDER BY merchant LIMIT 1)
                UNION ALL
                SELECT (SELECT e.merchant FROM webhook_events e WHERE e.state = 'pending' AND e.merchant > m.merchant
                    ORDER BY e.merchant LIMIT 1)
                FROM merchants m WHERE m.merchant IS NOT NULL),
            firsts AS (
                SELECT m.merchant, f.next_attempt_at, f.seq FROM merchants m
                CROSS JOIN LATERAL (SELECT next_attempt_at, seq FROM webhook_events WHERE state = 'pending' AND merchant = m.merchant
                    AND next_attempt_at <= \(date) ORDER BY next_attempt_at, seq LIMIT 1) f
                WHERE m.merchant IS NOT NULL AND NOT (m.merchant = ANY(\(lease.excluding.sorted())))),
            chosen AS (SELECT merchant FROM firsts ORDER BY next_attempt_at, seq LIMIT \(Int64(lease.merchants))),
            candidates AS (
                SELECT c.id FROM chosen CROSS JOIN LATERAL (SELECT id FROM webhook_events WHERE state = 'pending'
                    AND merchant = chosen.merchant AND next_attempt_at <= \(date) ORDER BY next_attempt_at, seq
                    LIMIT \(Int64(lease.perMerchant))) c),
            picked AS (
                SELECT e.id, e.next_attempt_at AS due_at, e.seq FROM webhook_events e
                WHERE e.id IN (SELECT id FROM candidates) AND e.state = 'pending' AND e.next_attempt_at <= \(date)
                ORDER BY e.next_attempt_at, e.seq LIMIT \(Int64(lease.total))
                FOR UPDATE OF e SKIP LOCKED)
            UPDATE webhook_events e SET next_attempt_at = \(leaseEnd) FROM picked WHERE e.id = picked.id
            RETURNING \(unescaped: Self.qualified(Self.eventColumns, by: "e")), picked.due_at, picked.seq
            """)
        return try leased.sorted { try ($0.date("due_at"), $0.integer("seq")) < ($1.date("due_at"), $1.integer("seq")) }
            .map(Self.event)
    }

    public func skipWebhookEvents(of merchants: Set<String>, at date: Date, reason: String) async throws -> Int {
        guard !merchants.isEmpty else { return 0 }
        return try await rows(
            """
            UPDATE webhook_events SET state = 'skipped', attempts = attempts + 1, next_attempt_at = NULL, last_status = NULL,
            last_error = \(reason)::text
            WHERE state = 'pending' AND next_attempt_at <= \(date)::timestamptz AND merchant = ANY(\(merchants.sorted())::text[])
            RETURNING id
            """
        ).count
    }

    public func recordDelivery(_ result: WebhookDeliveryResult) async throws -> Bool {
        try await rows(
            """
            UPDATE webhook_events SET state = \(result.state.rawValue), attempts = attempts + 1, next_attempt_at = \(result.nextAttemptAt),
            last_status = \(result.status.map { Int64($0) }), last_error = \(result.error),
            delivered_at = CASE WHEN \(result.state == .delivered) THEN \(result.at) ELSE delivered_at END
            WHERE id = \(result.eventId) AND state = 'pending' AND attempts = \(Int64(result.attempt)) RETURNING id
            """
        ).count == 1
    }

    public func webhookEvents(merchantIdentifier: String?, state: WebhookEvent.DeliveryState?, limit: Int) async throws -> [WebhookEvent] {
        try await rows(
            """
            SELECT \(unescaped: Self.eventColumns) FROM webhook_events
            WHERE (\(merchantIdentifier)::text IS NULL OR merchant = \(merchantIdentifier))
            AND (\(state?.rawValue)::text IS NULL OR state = \(state?.rawValue))
            ORDER BY created_at DESC, seq DESC LIMIT \(Int64(limit))
            """
        ).map(Self.event)
    }

    public func webhookEvent(id: String) async throws -> WebhookEvent? {
        try await rows("SELECT \(unescaped: Self.eventColumns) FROM webhook_events WHERE id = \(id)").first.map(Self.event)
    }

    public func replayWebhookEvent(id: String, at date: Date) async throws -> Bool {
        try await rows("UPDATE webhook_events SET state = 'pending', next_attempt_at = \(date) WHERE id = \(id) RETURNING id").count == 1
    }

    /// The feed by (writing transaction, insertion), of transactions older than every one still
    /// open (`pg_snapshot_xmin`): each of those has ended, so no row can appear among them later,
    /// while a transaction still open may hold an event inserted before another's that committed.
    /// Those wait until it ends. (`xid` defaults to `pg_current_xact_id()`: the top-level
    /// transaction, whatever savepoint inserts.) The cursor is the `after` event's pair.
    public func webhookEventFeed(of merchant: String, after: String?, limit: Int) async throws -> [WebhookEvent]? {
        var cursor = (xid: "0", seq: Int64(0))
        if let after {
            let found = try await rows("SELECT xid::text AS xid, seq FROM webhook_events WHERE id = \(after) AND merchant = \(merchant)")
            guard let row = found.first else { return nil }
            cursor = (try row.text("xid"), try row.integer("seq"))
        }
        return try await rows(
            """
            SELECT \(unescaped: Self.eventColumns) FROM webhook_events
            WHERE merchant = \(merchant) AND (xid, seq) > (\(cursor.xid)::xid8, \(cursor.seq))
            AND xid < pg_snapshot_xmin(pg_current_snapshot())
            ORDER BY xid, seq LIMIT \(Int64(max(0, limit)))
            """
        ).map(Self.event)
    }

    static func event(_ row: PostgresRandomAccessRow) throws -> WebhookEvent {
        WebhookEvent(
            id: try row.text("id"), merchantIdentifier: try row.text("merchant"),
            type: WebhookEventType(rawValue: try row.text("type")) ?? .paymentUnknown, payload: try row.bytes("payload"),
            createdAt: try row.date("created_at"), state: WebhookEvent.DeliveryState(rawValue: try row.text("state")) ?? .pending,
            attempts: Int(try row.integer("attempts")), nextAttemptAt: try row.optionalDate("next_attempt_at"),
            lastStatus: try row.optionalInteger("last_status").map { Int($0) }, lastError: try row.optionalText("last_error"),
            deliveredAt: try row.optionalDate("delivered_at"))
    }
}
