import ApplePay
import Foundation
import OrchardCore
import PostgresNIO

/// A move that releases an uncaptured payment's amount (``PaymentTransition/release``): rare
/// (a refund before capture), so written in one transaction of several statements rather than
/// the one-statement move. The order's compare-and-set first, as every move and claim, then the
/// payment's; the move's event, the refund and its `payment.refunded` only if both moved.
extension PostgresStore {
    func transition(_ change: PaymentTransition, releasing release: RefundRecord) async throws -> PaymentRecord? {
        guard let from = change.move.from else { return nil }
        let links = try (change.links ?? change.outcome?.links).map(Self.json)
        return try await transaction { [self] connection -> PaymentRecord? in
            let owner = try await connection.rows(
                """
                UPDATE orders SET state = \(change.move.order.to.rawValue) WHERE id = \(change.orderId)
                AND state = \(change.move.order.from.rawValue) RETURNING merchant
                """, logger
            ).first
            guard let merchant = try owner?.text("merchant") else { return nil }
            guard
                let row = try await connection.rows(
                    "SELECT \(unescaped: Self.paymentColumns) FROM payments WHERE id = \(change.paymentId) FOR UPDATE", logger
                ).first,
                case let old = try Self.payment(row), old.orderId == change.orderId, old.state == from
            else {
                // The payment was elsewhere: the order goes back as this transaction found it.
                try await connection.query(
                    """
                    UPDATE orders SET state = \(change.move.order.from.rawValue) WHERE id = \(change.orderId)
                    AND state = \(change.move.order.to.rawValue)
                    """, logger: logger)
                return nil
            }
            let moved = change.applied(to: old, stored: Self.stored)
            let written = try await connection.rows(
                """
                UPDATE payments SET state = \(moved.state.rawValue), updated_at = \(change.at), operation_until = NULL,
                links = COALESCE(\(links), links), capture_due_at = \(moved.captureDueAt), amount_captured = \(moved.amountCaptured),
                retry_payload = NULL
                WHERE id = \(change.paymentId) AND state = \(from.rawValue) RETURNING \(unescaped: Self.paymentColumns)
                """, logger)
            guard let payment = try written.first.map(Self.payment) else {
                // Locked and read in this state above: only a broken invariant gets here; all of it rolls back.
                throw StoreError(code: .storage, message: "payment \(change.paymentId) moved under its row lock")
            }
            if let type = PaymentLifecycle.reportedEvent(change.move, moved: payment) {
                try await insertPaymentEvent(type, payment: payment, merchant: merchant, on: connection, at: change.at)
            }
            try await connection.query(
                """
                INSERT INTO refunds (\(unescaped: Self.refundColumns)) VALUES (
                \(release.id), \(release.paymentId), \(release.amount), \(release.currency), \(release.state.rawValue),
                \(release.reference), \(release.idempotencyKey), \(Int64(release.sends)), NULL, NULL, \(release.processorMessage),
                \(release.createdAt), \(release.updatedAt), \(release.lastSentAt), true)
                """, logger: logger)
            try await insertPaymentEvent(
                .paymentRefunded, payment: payment, merchant: merchant, refund: release, on: connection, at: change.at)
            return payment
        }
    }
}
