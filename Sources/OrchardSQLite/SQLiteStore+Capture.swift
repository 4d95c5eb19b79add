import Foundation
import OrchardCore

/// Automatic captures due: leased by the capture loop, and refusals recorded by compare-and-set.
extension SQLiteStore {
    public func leasePaymentsForCapture(at date: Date, until leaseEnd: Date, limit: Int) async throws -> [PaymentRecord] {
        try await database.run { db in
            let due = try db.query(
                """
                SELECT \(unescaped: Self.paymentColumns) FROM payments WHERE state = 'authorized' AND capture_due_at IS NOT NULL
                AND capture_due_at <= \(date) ORDER BY capture_due_at, rowid LIMIT \(limit)
                """
            ).map(Self.payment)
            for payment in due {
                try db.execute("UPDATE payments SET capture_due_at = \(leaseEnd) WHERE id = \(payment.id) AND state = 'authorized'")
            }
            return due.map { payment in
                var leased = payment
                leased.captureDueAt = Self.stored(leaseEnd)
                return leased
            }
        }
    }

    public func recordCaptureRefusal(_ refusal: CaptureRefusal) async throws -> PaymentRecord? {
        try await database.run { db -> PaymentRecord? in
            let refused = try db.execute(
                """
                UPDATE payments SET capture_attempts = \(refusal.refusalsBefore + 1), capture_due_at = \(refusal.nextAttemptAt)
                WHERE id = \(refusal.paymentId) AND state = 'authorized' AND capture_due_at IS NOT NULL
                AND capture_attempts = \(refusal.refusalsBefore)
                """)
            guard refused == 1 else { return nil }
            let payment = try Self.payment(id: refusal.paymentId, in: db)
            if let type = refusal.event {
                try Self.insertPaymentEvent(type, paymentId: payment.id, payment: payment, in: db, at: refusal.at)
            }
            return payment
        }
    }
}
