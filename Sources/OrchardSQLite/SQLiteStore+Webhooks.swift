import ApplePay
import Foundation
import OrchardCore

/// The webhook outbox: events are inserted in the transaction of the change they report.
extension SQLiteStore {
    static let eventColumns = """
        id, merchant, type, payload, created_at, state, attempts, next_attempt_at, last_status, last_error, delivered_at
        """

    /// `seq`, the feed's order, is the next number inside the write transaction. Write
    /// transactions run one at a time (the one writer connection's `BEGIN IMMEDIATE` takes the
    /// file's write lock first, so another process's wait too), and readers see only commits: a
    /// number taken in one is higher than any committed before, so numbering order is commit
    /// order. Not the rowid: a table without an INTEGER PRIMARY KEY may be renumbered by VACUUM.
    static func insertEvent(in db: SQLiteDatabase, _ event: WebhookEvent) throws {
        try db.execute(
            """
            INSERT INTO webhook_events (\(unescaped: eventColumns), seq) VALUES (
            \(event.id), \(event.merchantIdentifier), \(event.type), \(event.payload), \(event.createdAt), \(event.state),
            \(event.attempts), \(event.nextAttemptAt), \(event.lastStatus), \(event.lastError), \(event.deliveredAt),
            (SELECT COALESCE(MAX(seq), 0) + 1 FROM webhook_events))
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
        // Only a settled payment, or one whose amount a refund released, has refunds: the sum is
        // not looked up on the authorization path.
        let refunded =
            payment.state == .settled || refund?.released == true
            ? try db.query(
                "SELECT COALESCE(SUM(amount), 0) AS refunded FROM refunds WHERE payment_id = \(paymentId) AND state = 'refunded'"
            ).first?.integer("refunded") ?? 0 : 0
        let request = try paymentRequest(in: db, id: payment.orderId)
        try insertEvent(
            in: db,
            try WebhookEvent.make(
                type, merchantIdentifier: merchant, payment: payment, request: request, refund: refund, refunded: refunded, at: date))
    }

    /// The lease reads only what it takes: the merchants with pending events by a skip scan of
    /// `webhook_events_pending` (state, merchant, next_attempt_at), each one's oldest due event,
    /// then the chosen merchants' first `perMerchant` in index order. Numbering every due event
    /// instead (a window over the whole backlog) cost 50 ms at 10,000 pending events and 125 ms at
    /// 30,000, every poll, on the writer thread every commit waits for: a merchant whose endpoint
    /// lags, or has none, made every payment's commit stall.
    public func leaseWebhookEvents(at date: Date, until leaseEnd: Date, fairly lease: WebhookLease) async throws -> [WebhookEvent] {
        try await database.run { db in
            let firsts = try db.query(
                """
                WITH RECURSIVE merchants(merchant) AS (
                    SELECT MIN(merchant) FROM webhook_events WHERE state = 'pending'
                    UNION ALL
                    SELECT (SELECT MIN(merchant) FROM webhook_events WHERE state = 'pending' AND merchant > merchants.merchant)
                    FROM merchants WHERE merchants.merchant IS NOT NULL)
                SELECT first.merchant, first.next_attempt_at, first.rowid AS seq FROM merchants
                JOIN webhook_events first ON first.rowid = (
                    SELECT rowid FROM webhook_events e WHERE e.state = 'pending' AND e.merchant = merchants.merchant
                    AND e.next_attempt_at <= \(date) ORDER BY e.next_attempt_at, e.rowid LIMIT 1)
                """
            ).filter { !lease.excluding.contains($0.text("merchant")) }
            // The merchants whose oldest due event is oldest, each with its own oldest `perMerchant`.
            let chosen = firsts.sorted {
                ($0.integer("next_attempt_at"), $0.integer("seq")) < ($1.integer("next_attempt_at"), $1.integer("seq"))
            }
            .prefix(lease.merchants)
            var due: [(event: WebhookEvent, seq: Int)] = []
            for merchant in chosen {
                due += try db.query(
                    """
                    SELECT \(unescaped: Self.eventColumns), rowid AS seq FROM webhook_events
                    WHERE state = 'pending' AND merchant = \(merchant.text("merchant")) AND next_attempt_at <= \(date)
                    ORDER BY next_attempt_at, rowid LIMIT \(lease.perMerchant)
                    """
                ).map { (Self.event($0), $0.int("seq")) }
            }
            let leased = due.sorted { ($0.event.nextAttemptAt ?? date, $0.seq) < ($1.event.nextAttemptAt ?? date, $1.seq) }
                .prefix(lease.total).map(\.event)
            for event in leased {
                try db.execute("UPDATE webhook_events SET next_attempt_at = \(leaseEnd) WHERE id = \(event.id)")
            }
            return leased.map { event in
                var leased = event
                leased.nextAttemptAt = Self.stored(leaseEnd)
                return leased
            }
        }
    }

    public func skipWebhookEvents(of merchants: Set<String>, at date: Date, reason: String) async throws -> Int {
        guard !merchants.isEmpty else { return 0 }
        // One statement: the merchants as a JSON array, so their number is not the statement's.
        let names = String(decoding: try JSONEncoder().encode(merchants.sorted()), as: UTF8.self)
        return try await write(
            """
            UPDATE webhook_events SET state = 'skipped', attempts = attempts + 1, next_attempt_at = NULL, last_status = NULL,
            last_error = \(reason)
            WHERE state = 'pending' AND next_attempt_at <= \(date) AND merchant IN (SELECT value FROM json_each(\(names)))
            """)
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

    /// The feed by `seq` (see ``insertEvent(in:_:)``), the cursor and the page read in one snapshot.
    public func webhookEventFeed(of merchant: String, after: String?, limit: Int) async throws -> [WebhookEvent]? {
        try await database.read { db in
            var start: Int64 = 0
            if let after {
                guard
                    let row = try db.query("SELECT seq FROM webhook_events WHERE id = \(after) AND merchant = \(merchant)").first
                else { return nil }
                start = row.integer("seq")
            }
            return try db.query(
                """
                SELECT \(unescaped: Self.eventColumns) FROM webhook_events WHERE merchant = \(merchant) AND seq > \(start)
                ORDER BY seq LIMIT \(max(0, limit))
                """
            ).map(Self.event)
        }
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
