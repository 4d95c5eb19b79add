import Foundation
import OrchardCore
import PostgresNIO

/// Automatic captures due: leased by the capture loop (rows another instance leases are
/// skipped, not waited for), and refusals recorded by compare-and-set with their event.
extension PostgresStore {
    public func leasePaymentsForCapture(at date: Date, until leaseEnd: Date, limit: Int) async throws -> [PaymentRecord] {
        let leased = try await rows(
            """
            WITH due AS (
                SELECT id, capture_due_at AS due_at, seq FROM payments
                WHERE state = 'authorized' AND capture_due_at <= \(date) ORDER BY capture_due_at, seq LIMIT \(Int64(limit))
                FOR UPDATE SKIP LOCKED)
            UPDATE payments p SET capture_due_at = \(leaseEnd) FROM due WHERE p.id = due.id
            RETURNING \(unescaped: Self.qualified(Self.paymentColumns, by: "p")), due.due_at, due.seq
            """)
        return try leased.sorted { try ($0.date("due_at"), $0.integer("seq")) < ($1.date("due_at"), $1.integer("seq")) }
            .map(Self.payment)
    }

    public func recordCaptureRefusal(_ refusal: CaptureRefusal) async throws -> PaymentRecord? {
        try await transaction { [self] connection -> PaymentRecord? in
            let refused = try await connection.rows(
                """
                UPDATE payments SET capture_attempts = \(Int64(refusal.refusalsBefore + 1)), capture_due_at = \(refusal.nextAttemptAt)
                WHERE id = \(refusal.paymentId) AND state = 'authorized' AND capture_due_at IS NOT NULL
                AND capture_attempts = \(Int64(refusal.refusalsBefore))
                RETURNING \(unescaped: Self.paymentColumns)
                """, logger)
            guard let payment = try refused.first.map(Self.payment) else { return nil }
            if let type = refusal.event {
                let owner = try await connection.rows("SELECT merchant FROM orders WHERE id = \(payment.orderId)", logger).first
                try await insertPaymentEvent(
                    type, payment: payment, merchant: try owner?.text("merchant") ?? "", on: connection, at: refusal.at)
            }
            return payment
        }
    }
}
