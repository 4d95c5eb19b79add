import ApplePay
import Foundation
import Logging
import OrchardCore
import PostgresNIO

/// Payments: read, leased for re-sending and reconciling (claims and moves have files of their own).
extension PostgresStore {
    static let paymentColumns = """
        id, order_id, transaction_id, state, amount, currency, network, last_four, processor_reference, created_at, processor, \
        reference, processor_code, processor_message, links, updated_at, sends, reconcile_attempts, next_reconcile_at, mandate_id, \
        merchant_token_id, merchant_token_metadata, last_sent_at, capture_due_at, capture_attempts, \
        amount_captured
        """

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

    public func payments(mandateId: String, limit: Int) async throws -> [PaymentRecord] {
        try await payments("WHERE mandate_id = \(mandateId) ORDER BY created_at DESC, seq DESC LIMIT \(Int64(limit))")
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
        var payment = PaymentRecord(
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
        payment.captureDueAt = try row.optionalDate("capture_due_at")
        payment.captureAttempts = Int(try row.integer("capture_attempts"))
        payment.amountCaptured = try row.optionalInteger("amount_captured")
        return payment
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
