import ApplePay
import Foundation
import OrchardCore

/// Refunds: claimed against what is left of a settled payment, then moved to their outcome.
extension SQLiteStore {
    static let refundColumns = """
        id, payment_id, amount, currency, state, reference, idempotency_key, sends, processor_reference, processor_code,
        processor_message, created_at, updated_at, last_sent_at, released
        """

    public func claimRefund(_ draft: RefundRecord) async throws -> RefundRecord {
        try await database.run { db in
            let decision = try RefundPolicy.decide(draft, try Self.refundSnapshot(draft, in: db))
            switch decision {
            case .existing: break
            case .resend(let resent):
                try db.execute(
                    """
                    UPDATE refunds SET state = 'pending', sends = sends + 1, updated_at = \(resent.updatedAt),
                    last_sent_at = \(resent.lastSentAt) WHERE id = \(resent.id) AND state = 'unknown'
                    """)
            case .new(let refund):
                try db.execute(
                    """
                    INSERT INTO refunds (\(unescaped: Self.refundColumns)) VALUES (
                    \(refund.id), \(refund.paymentId), \(refund.amount), \(refund.currency), \(refund.state), \(refund.reference),
                    \(refund.idempotencyKey), 1, NULL, NULL, NULL, \(refund.createdAt), \(refund.createdAt), \(refund.lastSentAt), NULL)
                    """)
            }
            return decision.refund
        }
    }

    /// What ``RefundPolicy`` decides a refund claim from, read in the claim's transaction.
    private static func refundSnapshot(_ draft: RefundRecord, in db: SQLiteDatabase) throws -> RefundClaimSnapshot {
        let earlier = try db.query(
            """
            SELECT \(unescaped: Self.refundColumns) FROM refunds
            WHERE payment_id = \(draft.paymentId) AND idempotency_key = \(draft.idempotencyKey)
            """
        ).first.map(Self.refund)
        let payment = try db.query("SELECT state, amount, reference, amount_captured FROM payments WHERE id = \(draft.paymentId)").first
        let refunds = try db.query(
            """
            SELECT COALESCE(SUM(amount) FILTER (WHERE state != 'refused' AND released IS NULL), 0) AS held, COUNT(*) AS count
            FROM refunds WHERE payment_id = \(draft.paymentId)
            """
        ).first
        return RefundClaimSnapshot(
            payment: try payment.map { row in
                guard let state: PaymentState = row.value("state") else {
                    throw StoreError(code: .storage, message: "payment \(draft.paymentId) has an unreadable state")
                }
                return .init(
                    state: state, amount: row.integer("amount"), reference: row.optionalText("reference") ?? draft.paymentId,
                    amountCaptured: row.optionalInteger("amount_captured"))
            },
            earlier: earlier, held: refunds?.integer("held") ?? 0, count: refunds?.int("count") ?? 0)
    }

    public func finishRefund(id: String, from: RefundState, state: RefundState, outcome: RefundOutcome?, at date: Date) async throws
        -> RefundRecord?
    {
        try await database.run { db in
            let changed = try db.execute(
                """
                UPDATE refunds SET state = \(state), processor_reference = COALESCE(\(outcome?.processorReference), processor_reference),
                processor_code = \(outcome?.code), processor_message = \(outcome?.message), updated_at = \(date)
                WHERE id = \(id) AND state = \(from)
                """)
            guard changed == 1,
                let refund = try db.query("SELECT \(unescaped: Self.refundColumns) FROM refunds WHERE id = \(id)").first.map(Self.refund)
            else { return nil }
            if let type = WebhookEventType.refundFinished(state) {
                try Self.insertPaymentEvent(type, paymentId: refund.paymentId, refund: refund, in: db, at: date)
            }
            return refund
        }
    }

    public func deferRefund(id: String, until date: Date) async throws -> Bool {
        try await write("UPDATE refunds SET leased_until = \(date) WHERE id = \(id) AND state = 'unknown'") == 1
    }

    public func refunds(paymentId: String) async throws -> [RefundRecord] {
        try await rows("SELECT \(unescaped: Self.refundColumns) FROM refunds WHERE payment_id = \(paymentId) ORDER BY created_at, rowid")
            .map(Self.refund)
    }

    public func leaseRefundsToReconcile(at date: Date, until leaseEnd: Date, pendingBefore: Date, maximumSends: Int, limit: Int)
        async throws -> [RefundRecord]
    {
        try await database.run { db in
            let candidates = try db.query(
                """
                SELECT \(unescaped: Self.refundColumns) FROM refunds
                WHERE ((state = 'unknown' AND sends <= \(maximumSends)) OR (state = 'pending' AND updated_at < \(pendingBefore)))
                AND (leased_until IS NULL OR leased_until <= \(date)) ORDER BY updated_at, rowid LIMIT \(limit)
                """
            ).map(Self.refund)
            for refund in candidates {
                try db.execute("UPDATE refunds SET leased_until = \(leaseEnd) WHERE id = \(refund.id)")
            }
            return candidates
        }
    }

    static func refund(_ row: SQLiteRow) -> RefundRecord {
        var refund = RefundRecord(
            id: row.text("id"), paymentId: row.text("payment_id"), amount: row.integer("amount"), currency: row.text("currency"),
            state: row.value("state") ?? .unknown, reference: row.text("reference"), idempotencyKey: row.text("idempotency_key"),
            sends: row.int("sends"), processorReference: row.optionalText("processor_reference"),
            processorCode: row.optionalText("processor_code"), processorMessage: row.optionalText("processor_message"),
            createdAt: row.date("created_at"), updatedAt: row.date("updated_at"), lastSentAt: row.optionalDate("last_sent_at"))
        refund.released = row.optionalInteger("released").map { $0 != 0 }
        return refund
    }

    /// Writes a released refund (``PaymentTransition/release``) in the current transaction.
    static func insertRelease(_ refund: RefundRecord, in db: SQLiteDatabase) throws {
        try db.execute(
            """
            INSERT INTO refunds (\(unescaped: refundColumns)) VALUES (
            \(refund.id), \(refund.paymentId), \(refund.amount), \(refund.currency), \(refund.state), \(refund.reference),
            \(refund.idempotencyKey), \(refund.sends), NULL, NULL, \(refund.processorMessage), \(refund.createdAt), \(refund.updatedAt),
            \(refund.lastSentAt), 1)
            """)
    }
}
