import ApplePay
import Foundation
import OrchardCore
import PostgresNIO

/// Refunds: claimed on the locked payment against what is left of it, then moved to their outcome.
extension PostgresStore {
    static let refundColumns = """
        id, payment_id, amount, currency, state, reference, idempotency_key, sends, processor_reference, processor_code, \
        processor_message, created_at, updated_at, last_sent_at, released
        """

    public func claimRefund(_ draft: RefundRecord) async throws -> RefundRecord {
        try await transaction { [self] connection in
            let decision = try RefundPolicy.decide(draft, try await self.refundSnapshot(draft, on: connection))
            switch decision {
            case .existing: break
            case .resend(let resent):
                try await connection.query(
                    """
                    UPDATE refunds SET state = 'pending', sends = sends + 1, updated_at = \(resent.updatedAt), last_sent_at = \(resent.lastSentAt)
                    WHERE id = \(resent.id) AND state = 'unknown'
                    """, logger: self.logger)
            case .new(let refund):
                try await connection.query(
                    """
                    INSERT INTO refunds (\(unescaped: Self.refundColumns)) VALUES (
                    \(refund.id), \(refund.paymentId), \(refund.amount), \(refund.currency), \(refund.state.rawValue), \(refund.reference),
                    \(refund.idempotencyKey), 1, NULL, NULL, NULL, \(refund.createdAt), \(refund.createdAt), \(refund.lastSentAt), NULL)
                    """, logger: self.logger)
            }
            return decision.refund
        }
    }

    /// What ``RefundPolicy`` decides a refund claim from. The payment row is locked first: two
    /// refunds of one payment take turns, so neither counts without the other's amount.
    private func refundSnapshot(_ draft: RefundRecord, on connection: PostgresConnection) async throws -> RefundClaimSnapshot {
        let payment = try await connection.rows(
            "SELECT state, amount, reference, amount_captured FROM payments WHERE id = \(draft.paymentId) FOR UPDATE", logger
        ).first
        let earlier = try await connection.rows(
            """
            SELECT \(unescaped: Self.refundColumns) FROM refunds
            WHERE payment_id = \(draft.paymentId) AND idempotency_key = \(draft.idempotencyKey)
            """, logger
        ).first.map(Self.refund)
        let refunds = try await connection.rows(
            """
            SELECT COALESCE(SUM(amount) FILTER (WHERE state != 'refused' AND released IS NULL), 0)::bigint AS held, COUNT(*) AS n FROM refunds
            WHERE payment_id = \(draft.paymentId)
            """, logger
        ).first
        return RefundClaimSnapshot(
            payment: try payment.map { row in
                guard let state = PaymentState(rawValue: try row.text("state")) else {
                    throw StoreError(code: .storage, message: "payment \(draft.paymentId) has an unreadable state")
                }
                return .init(
                    state: state, amount: try row.integer("amount"), reference: try row.text("reference"),
                    amountCaptured: try row.optionalInteger("amount_captured"))
            },
            earlier: earlier, held: try refunds?.integer("held") ?? 0, count: Int(try refunds?.integer("n") ?? 0))
    }

    public func finishRefund(id: String, from: RefundState, state: RefundState, outcome: RefundOutcome?, at date: Date) async throws
        -> RefundRecord?
    {
        try await transaction { [self] connection -> RefundRecord? in
            let finished = try await connection.rows(
                """
                UPDATE refunds SET state = \(state.rawValue), processor_reference = COALESCE(\(outcome?.processorReference),
                processor_reference), processor_code = \(outcome?.code), processor_message = \(outcome?.message), updated_at = \(date)
                WHERE id = \(id) AND state = \(from.rawValue) RETURNING \(unescaped: Self.refundColumns)
                """, logger)
            guard let refund = try finished.first.map(Self.refund) else { return nil }
            if let type = WebhookEventType.refundFinished(state) {
                let rows = try await connection.rows(
                    """
                    SELECT \(unescaped: Self.qualified(Self.paymentColumns, by: "p")), o.merchant FROM payments p JOIN orders o ON o.id = p.order_id
                    WHERE p.id = \(refund.paymentId)
                    """, logger)
                if let row = rows.first {
                    try await insertPaymentEvent(
                        type, payment: try Self.payment(row), merchant: try row.text("merchant"), refund: refund,
                        on: connection,
                        at: date)
                }
            }
            return refund
        }
    }

    public func deferRefund(id: String, until date: Date) async throws -> Bool {
        try await rows("UPDATE refunds SET leased_until = \(date) WHERE id = \(id) AND state = 'unknown' RETURNING id").count == 1
    }

    public func refunds(paymentId: String) async throws -> [RefundRecord] {
        try await rows("SELECT \(unescaped: Self.refundColumns) FROM refunds WHERE payment_id = \(paymentId) ORDER BY created_at, seq")
            .map(Self.refund)
    }

    public func leaseRefundsToReconcile(at date: Date, until leaseEnd: Date, pendingBefore: Date, maximumSends: Int, limit: Int)
        async throws -> [RefundRecord]
    {
        let leased = try await rows(
            """
            WITH candidates AS (
                SELECT id, seq FROM refunds
                WHERE ((state = 'unknown' AND sends <= \(Int64(maximumSends))) OR (state = 'pending' AND updated_at < \(pendingBefore)))
                AND (leased_until IS NULL OR leased_until <= \(date)) ORDER BY updated_at, seq LIMIT \(Int64(limit))
                FOR UPDATE SKIP LOCKED)
            UPDATE refunds r SET leased_until = \(leaseEnd) FROM candidates c WHERE r.id = c.id
            RETURNING \(unescaped: Self.qualified(Self.refundColumns, by: "r")), c.seq
            """)
        return try leased.sorted { try ($0.date("updated_at"), $0.integer("seq")) < ($1.date("updated_at"), $1.integer("seq")) }
            .map(Self.refund)
    }

    static func refund(_ row: PostgresRandomAccessRow) throws -> RefundRecord {
        var refund = RefundRecord(
            id: try row.text("id"), paymentId: try row.text("payment_id"), amount: try row.integer("amount"),
            currency: try row.text("currency"), state: RefundState(rawValue: try row.text("state")) ?? .unknown,
            reference: try row.text("reference"), idempotencyKey: try row.text("idempotency_key"), sends: Int(try row.integer("sends")),
            processorReference: try row.optionalText("processor_reference"), processorCode: try row.optionalText("processor_code"),
            processorMessage: try row.optionalText("processor_message"), createdAt: try row.date("created_at"),
            updatedAt: try row.date("updated_at"), lastSentAt: try row.optionalDate("last_sent_at"))
        refund.released = try row["released"].decode(Bool?.self)
        return refund
    }
}
