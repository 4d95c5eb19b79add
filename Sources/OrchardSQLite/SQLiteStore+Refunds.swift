import ApplePay
import Foundation
import OrchardCore

/// Refunds: claimed against what is left of a settled payment, then moved to their outcome.
extension SQLiteStore {
    static let refundColumns = """
        id, payment_id, amount, currency, state, reference, idempotency_key, sends, processor_reference, processor_code,
        processor_message, created_at, updated_at, last_sent_at
        """

    public func claimRefund(_ draft: RefundRecord) async throws -> RefundRecord {
        try await database.run { db in
            try db.transaction {
                let decision = try RefundPolicy.decide(draft, try Self.refundSnapshot(draft, in: db))
                switch decision {
                case .existing: break
                case .resend(let resent):
                    try db.execute(
                        "UPDATE refunds SET state = 'pending', sends = sends + 1, updated_at = ?, last_sent_at = ? WHERE id = ? AND state = 'unknown'",
                        [.time(resent.updatedAt), resent.lastSentAt.map(SQLiteValue.time) ?? .null, .text(resent.id)])
                case .new(let refund):
                    try db.execute(
                        "INSERT INTO refunds (\(Self.refundColumns)) VALUES (\(Self.placeholders(14)))",
                        [
                            .text(refund.id), .text(refund.paymentId), .integer(refund.amount), .text(refund.currency),
                            .text(refund.state.rawValue), .text(refund.reference), .text(refund.idempotencyKey), .integer(1), .null, .null,
                            .null, .time(refund.createdAt), .time(refund.createdAt), refund.lastSentAt.map(SQLiteValue.time) ?? .null,
                        ])
                }
                return decision.refund
            }
        }
    }

    /// What ``RefundPolicy`` decides a refund claim from, read in the claim's transaction.
    private static func refundSnapshot(_ draft: RefundRecord, in db: SQLiteDatabase) throws -> RefundClaimSnapshot {
        let earlier = try db.query(
            "SELECT \(Self.refundColumns) FROM refunds WHERE payment_id = ? AND idempotency_key = ?",
            [.text(draft.paymentId), .text(draft.idempotencyKey)]
        ).first.map(Self.refund)
        let payment = try db.query("SELECT state, amount, reference FROM payments WHERE id = ?", [.text(draft.paymentId)]).first
        let refunds =
            try db.query(
                "SELECT COALESCE(SUM(amount) FILTER (WHERE state != 'refused'), 0), COUNT(*) FROM refunds WHERE payment_id = ?",
                [.text(draft.paymentId)]
            ).first ?? []
        return RefundClaimSnapshot(
            payment: try payment.map { row in
                guard let state = row[0].text.flatMap(PaymentState.init(rawValue:)) else {
                    throw StoreError(code: .storage, message: "payment \(draft.paymentId) has an unreadable state")
                }
                return .init(state: state, amount: row[1].integer ?? 0, reference: row[2].text ?? draft.paymentId)
            },
            earlier: earlier, held: refunds.first?.integer ?? 0, count: Int(refunds.last?.integer ?? 0))
    }

    public func finishRefund(id: String, from: RefundState, state: RefundState, outcome: RefundOutcome?, at date: Date) async throws
        -> RefundRecord?
    {
        try await database.run { db in
            try db.transaction { () -> RefundRecord? in
                let changed = try db.execute(
                    """
                    UPDATE refunds SET state = ?, processor_reference = COALESCE(?, processor_reference), processor_code = ?,
                    processor_message = ?, updated_at = ? WHERE id = ? AND state = ?
                    """,
                    [
                        .text(state.rawValue), outcome?.processorReference.map(SQLiteValue.text) ?? .null,
                        outcome?.code.map(SQLiteValue.text) ?? .null, outcome?.message.map(SQLiteValue.text) ?? .null, .time(date),
                        .text(id), .text(from.rawValue),
                    ])
                guard changed == 1,
                    let refund = try db.query("SELECT \(Self.refundColumns) FROM refunds WHERE id = ?", [.text(id)]).first.map(Self.refund)
                else { return nil }
                if state == .refunded {
                    try Self.insertPaymentEvent(.paymentRefunded, paymentId: refund.paymentId, refund: refund, in: db, at: date)
                }
                return refund
            }
        }
    }

    public func deferRefund(id: String, until date: Date) async throws -> Bool {
        try await database.run { db in
            try db.execute("UPDATE refunds SET leased_until = ? WHERE id = ? AND state = 'unknown'", [.time(date), .text(id)])
        } == 1
    }

    public func refunds(paymentId: String) async throws -> [RefundRecord] {
        try await database.read { db in
            try db.query("SELECT \(Self.refundColumns) FROM refunds WHERE payment_id = ? ORDER BY created_at, rowid", [.text(paymentId)])
                .map(Self.refund)
        }
    }

    public func leaseRefundsToReconcile(at date: Date, until leaseEnd: Date, pendingBefore: Date, maximumSends: Int, limit: Int)
        async throws -> [RefundRecord]
    {
        try await database.run { db in
            try db.transaction {
                let candidates = try db.query(
                    """
                    SELECT \(Self.refundColumns) FROM refunds
                    WHERE ((state = 'unknown' AND sends <= ?) OR (state = 'pending' AND updated_at < ?))
                    AND (leased_until IS NULL OR leased_until <= ?) ORDER BY updated_at, rowid LIMIT ?
                    """, [.integer(Int64(maximumSends)), .time(pendingBefore), .time(date), .integer(Int64(limit))]
                ).map(Self.refund)
                for refund in candidates {
                    try db.execute("UPDATE refunds SET leased_until = ? WHERE id = ?", [.time(leaseEnd), .text(refund.id)])
                }
                return candidates
            }
        }
    }

    static func refund(_ row: [SQLiteValue]) -> RefundRecord {
        RefundRecord(
            id: row[0].text ?? "", paymentId: row[1].text ?? "", amount: row[2].integer ?? 0, currency: row[3].text ?? "",
            state: RefundState(rawValue: row[4].text ?? "") ?? .unknown, reference: row[5].text ?? "", idempotencyKey: row[6].text ?? "",
            sends: Int(row[7].integer ?? 1), processorReference: row[8].text, processorCode: row[9].text, processorMessage: row[10].text,
            createdAt: row[11].date, updatedAt: row[12].date,
            lastSentAt: row[13].integer.map { Date(timeIntervalSince1970: TimeInterval($0)) })
    }
}
