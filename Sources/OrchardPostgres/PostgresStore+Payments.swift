import ApplePay
import Foundation
import Logging
import OrchardCore
import PostgresNIO

/// Payments: claimed on a locked order, moved by compare-and-set, leased for re-sending.
extension PostgresStore {
    static let paymentColumns = """
        id, order_id, transaction_id, state, amount, currency, network, last_four, processor_reference, created_at, processor, \
        reference, processor_code, processor_message, links, updated_at, sends, reconcile_attempts, next_reconcile_at, mandate_id, \
        merchant_token_id, merchant_token_metadata, last_sent_at
        """

    public func claimPayment(_ claim: PaymentClaim) async throws -> PaymentRecord {
        try await transaction { connection in
            do {
                return try await self.claim(claim, on: connection)
            } catch let error as PSQLError where error.sqlState == "23505" {
                // Another order's claim of the same transaction ID committed first.
                throw BusinessRefusal(.duplicateTransaction, "transaction \(claim.transactionId.prefix(16))… was already used")
            }
        }
    }

    /// The claim's transaction: the order row is locked first, so claims and moves of one order
    /// take turns, and a claim sees the transaction IDs every earlier one committed.
    private func claim(_ claim: PaymentClaim, on connection: PostgresConnection) async throws -> PaymentRecord {
        let orderId = claim.draft.orderId
        let decision = try PaymentClaimPolicy.decide(claim, try await claimSnapshot(claim, on: connection))
        let payment: PaymentRecord?
        switch decision.attempt {
        case .first(let record):
            payment = try await insertPayment(record, sealed: claim.sealedRequest, on: connection)
        case .resend(let paymentId, let sends):
            let now = claim.draft.createdAt
            payment = try await connection.rows(
                """
                UPDATE payments SET state = \(decision.move.to.rawValue), sends = sends + 1, retry_payload = \(claim.sealedRequest.bytea),
                updated_at = \(now), last_sent_at = \(now)
                WHERE id = \(paymentId) AND state = \(decision.move.from?.rawValue ?? "") AND sends = \(Int64(sends))
                RETURNING \(unescaped: Self.paymentColumns)
                """, logger
            ).first.map(Self.payment)
            guard payment != nil else {
                throw BusinessRefusal(.paymentInProgress, "order \(orderId)'s payment was sent again meanwhile")
            }
        }
        guard let payment else { throw StoreError(code: .storage, message: "payment \(decision.paymentId) vanished while it was claimed") }
        // The order's move and the transaction ID in one round trip: nothing is recorded unless the order moved.
        let claimed = try await connection.rows(
            """
            WITH moved AS (
                UPDATE orders SET state = \(decision.move.order.to.rawValue)
                WHERE id = \(orderId) AND state = \(decision.move.order.from.rawValue) AND price_version = \(Int64(decision.priceVersion))
                RETURNING id)
            INSERT INTO payment_transactions (transaction_id, payment_id, created_at)
            SELECT \(claim.transactionId), \(decision.paymentId), \(claim.draft.createdAt) FROM moved RETURNING payment_id
            """, logger)
        guard claimed.count == 1 else { throw BusinessRefusal(.orderChanged, "order \(orderId) changed") }
        return payment
    }

    /// What ``PaymentClaimPolicy`` decides a claim from: the order locked first, then, in a
    /// statement of its own after the lock, what every claim committed before this one left.
    private func claimSnapshot(_ claim: PaymentClaim, on connection: PostgresConnection) async throws -> PaymentClaimSnapshot {
        let orderId = claim.draft.orderId
        let order = try await connection.rows(
            "SELECT state, price_version, expires_at FROM orders WHERE id = \(orderId) FOR UPDATE", logger
        ).first
        let seen = try await connection.rows(
            """
            SELECT EXISTS (SELECT 1 FROM payment_transactions WHERE transaction_id = \(claim.transactionId)) AS used,
            (SELECT COUNT(*) FROM payments WHERE order_id = \(orderId)) AS n, u.id, u.sends
            FROM (SELECT 1) AS one LEFT JOIN LATERAL (
                SELECT id, sends FROM payments WHERE order_id = \(orderId) AND state = 'unknown' ORDER BY created_at DESC, seq DESC LIMIT 1
            ) AS u ON true
            """, logger
        ).first
        return PaymentClaimSnapshot(
            order: try order.map { row in
                guard let state = OrderRecord.State(rawValue: try row.text("state")) else {
                    throw StoreError(code: .storage, message: "order \(orderId) has an unreadable state")
                }
                return .init(
                    state: state, priceVersion: Int(try row.integer("price_version")), expiresAt: try row.optionalDate("expires_at"))
            },
            transactionUsed: try seen?.bool("used") ?? false,
            unknownAttempt: try seen?.optionalText("id").map { .init(id: $0, sends: Int(try seen?.optionalInteger("sends") ?? 1)) },
            attempts: Int(try seen?.integer("n") ?? 0))
    }

    private func insertPayment(_ payment: PaymentRecord, sealed: [UInt8], on connection: PostgresConnection) async throws -> PaymentRecord?
    {
        let links = try Self.json(payment.links)
        let metadata = try payment.merchantTokenMetadata.map(Self.json)
        return try await connection.rows(
            """
            INSERT INTO payments (\(unescaped: Self.paymentColumns), retry_payload) VALUES (
            \(payment.id), \(payment.orderId), \(payment.transactionId), \(payment.state.rawValue), \(payment.amount),
            \(payment.currency), \(payment.network), \(payment.lastFour), \(payment.processorReference), \(payment.createdAt),
            \(payment.processor), \(payment.reference), \(payment.processorCode), \(payment.processorMessage), \(links),
            \(payment.updatedAt), \(Int64(payment.sends)), \(Int64(payment.reconcileAttempts)), \(payment.nextReconcileAt),
            \(payment.mandateId), \(payment.merchantTokenIdentifier), \(metadata), \(payment.lastSentAt), \(sealed.bytea))
            RETURNING \(unescaped: Self.paymentColumns)
            """, logger
        ).first.map(Self.payment)
    }

    public func transition(_ change: PaymentTransition) async throws -> PaymentRecord? {
        guard let from = change.move.from else { preconditionFailure("a new payment is claimed, not moved") }
        let links = try (change.links ?? change.outcome?.links).map(Self.json)
        let outcome = change.outcome
        let counts: Int64 = change.countsReconcileAttempt ? 1 : 0
        // A re-send: only as often sent as the engine saw it, and sent last now.
        let expected = change.expectedSends.map(Int64.init)
        do {
            return try await transaction { connection -> PaymentRecord? in
                // One statement: the order's compare-and-set runs first (the payment's waits for it, as an
                // InitPlan), so claims, which lock the order first too, never deadlock with a move.
                let moved = try await connection.rows(
                    """
                    WITH moved_order AS (
                        UPDATE orders SET state = \(change.move.order.to.rawValue)
                        WHERE id = \(change.orderId) AND state = \(change.move.order.from.rawValue) RETURNING merchant),
                    moved_payment AS (
                        UPDATE payments SET state = \(change.move.to.rawValue), updated_at = \(change.at), operation_until = NULL,
                        processor_reference = CASE WHEN \(outcome != nil) THEN \(outcome?.processorReference) ELSE processor_reference END,
                        processor_code = CASE WHEN \(outcome != nil) THEN \(outcome?.code) ELSE processor_code END,
                        processor_message = CASE WHEN \(outcome != nil) THEN \(outcome?.message) ELSE processor_message END,
                        links = COALESCE(\(links), links), sends = sends + \(counts), reconcile_attempts = reconcile_attempts + \(counts),
                        next_reconcile_at = \(change.nextReconcileAt), mandate_id = COALESCE(\(change.mandate?.id), mandate_id),
                        retry_payload = CASE WHEN \(PaymentLifecycle.isResolved(change.move.to)) THEN NULL ELSE retry_payload END,
                        last_sent_at = CASE WHEN \(expected)::bigint IS NULL THEN last_sent_at ELSE \(change.at) END
                        WHERE id = \(change.paymentId) AND order_id = \(change.orderId) AND state = \(from.rawValue)
                        AND (\(expected)::bigint IS NULL OR sends = \(expected)) AND EXISTS (SELECT 1 FROM moved_order)
                        RETURNING \(unescaped: Self.paymentColumns))
                    SELECT moved_payment.*, moved_order.merchant FROM moved_payment, moved_order
                    """, logger)
                // Either one not moving rolls both back.
                guard let row = moved.first else { throw Conflict() }
                let merchant = try row.text("merchant")
                let payment = try Self.payment(row)
                if let type = PaymentLifecycle.reportedEvent(change.move, moved: payment) {
                    try await insertPaymentEvent(type, payment: payment, merchant: merchant, on: connection, at: change.at)
                }
                if let mandate = change.mandate { try await insertMandate(mandate, payment: payment, on: connection) }
                return payment
            }
        } catch is Conflict {
            return nil
        }
    }

    public func retryPayload(paymentId: String) async throws -> [UInt8]? {
        try await rows("SELECT retry_payload FROM payments WHERE id = \(paymentId)").first?.optionalBytes("retry_payload")
    }

    public func leasePaymentsForReconciliation(at date: Date, until leaseEnd: Date, limit: Int) async throws -> [PaymentRecord] {
        let leased = try await rows(
            """
            WITH due AS (
                SELECT id, next_reconcile_at AS due_at, seq FROM payments
                WHERE state = 'unknown' AND next_reconcile_at <= \(date) ORDER BY next_reconcile_at, seq LIMIT \(Int64(limit))
                FOR UPDATE SKIP LOCKED)
            UPDATE payments p SET next_reconcile_at = \(leaseEnd) FROM due WHERE p.id = due.id
            RETURNING \(unescaped: Self.qualified(Self.paymentColumns, by: "p")), due.due_at, due.seq
            """)
        return try leased.sorted { try ($0.date("due_at"), $0.integer("seq")) < ($1.date("due_at"), $1.integer("seq")) }
            .map(Self.payment)
    }

    public func stalePendingPayments(before date: Date) async throws -> [PaymentRecord] {
        try await payments("WHERE state = 'pending' AND updated_at < \(date) ORDER BY updated_at, seq")
    }

    public func deferReconciliation(paymentId: String, until date: Date?) async throws -> Bool {
        try await rows("UPDATE payments SET next_reconcile_at = \(date) WHERE id = \(paymentId) AND state = 'unknown' RETURNING id")
            .count == 1
    }

    public func payments(orderId: String) async throws -> [PaymentRecord] {
        try await payments("WHERE order_id = \(orderId) ORDER BY created_at, seq")
    }

    public func payment(id: String) async throws -> PaymentRecord? {
        try await payments("WHERE id = \(id)").first
    }

    public func payments(state: PaymentState?, limit: Int) async throws -> [PaymentRecord] {
        try await payments(
            "WHERE \(state?.rawValue)::text IS NULL OR state = \(state?.rawValue) ORDER BY created_at DESC, seq DESC LIMIT \(Int64(limit))")
    }

    /// Payments matching `clause` (a WHERE clause and its ordering, values bound).
    private func payments(_ clause: PostgresQuery) async throws -> [PaymentRecord] {
        try await rows(PostgresQuery(unsafeSQL: "SELECT \(Self.paymentColumns) FROM payments " + clause.sql, binds: clause.binds))
            .map(Self.payment)
    }

    static func payment(_ row: PostgresRandomAccessRow) throws -> PaymentRecord {
        PaymentRecord(
            id: try row.text("id"), orderId: try row.text("order_id"), transactionId: try row.text("transaction_id"),
            state: PaymentState(rawValue: try row.text("state")) ?? .unknown, amount: try row.integer("amount"),
            currency: try row.text("currency"), network: try row.optionalText("network"), lastFour: try row.text("last_four"),
            processor: try row.text("processor"), reference: try row.text("reference"),
            processorReference: try row.optionalText("processor_reference"), processorCode: try row.optionalText("processor_code"),
            processorMessage: try row.optionalText("processor_message"), links: try decode([String: String].self, try row.text("links")),
            sends: Int(try row.integer("sends")), reconcileAttempts: Int(try row.integer("reconcile_attempts")),
            nextReconcileAt: try row.optionalDate("next_reconcile_at"), mandateId: try row.optionalText("mandate_id"),
            merchantTokenIdentifier: try row.optionalText("merchant_token_id"),
            merchantTokenMetadata: try row.optionalText("merchant_token_metadata").flatMap {
                try? decode(DecryptedPayment.MerchantTokenMetadata.self, $0)
            }, createdAt: try row.date("created_at"), updatedAt: try row.date("updated_at"),
            lastSentAt: try row.optionalDate("last_sent_at"))
    }

    public func claimOperation(paymentId: String, in state: PaymentState, at date: Date, until leaseEnd: Date) async throws -> Bool {
        try await rows(
            """
            UPDATE payments SET operation_until = \(leaseEnd)
            WHERE id = \(paymentId) AND state = \(state.rawValue) AND (operation_until IS NULL OR operation_until <= \(date))
            RETURNING id
            """
        ).count == 1
    }

    public func releaseOperation(paymentId: String) async throws {
        _ = try await rows("UPDATE payments SET operation_until = NULL WHERE id = \(paymentId) RETURNING id")
    }
}
