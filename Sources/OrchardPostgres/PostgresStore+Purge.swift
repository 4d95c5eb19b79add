import Foundation
import OrchardCore
import PostgresNIO

/// Retention: deleting what has served its purpose (never payments or refunds).
extension PostgresStore {
    public func purge(before cutoffs: PurgeCutoffs, limit: Int) async throws -> PurgeCounts {
        var counts = PurgeCounts()
        let limit = Int64(limit)
        if let date = cutoffs.expiredOrders {
            counts.orders = try await transaction { [self] connection in
                // Locked and skipped when another instance purges them now; the state is checked
                // again by the DELETE, so an order that moved on is never removed.
                let ids = try await connection.rows(
                    """
                    SELECT id FROM orders WHERE state = 'expired' AND expires_at < \(date)
                    AND NOT EXISTS (SELECT 1 FROM payments WHERE payments.order_id = orders.id)
                    LIMIT \(limit) FOR UPDATE SKIP LOCKED
                    """, logger
                ).map { try $0.text("id") }
                guard !ids.isEmpty else { return 0 }
                try await connection.query("DELETE FROM payment_requests WHERE id = ANY(\(ids))", logger: logger)
                return try await connection.rows(
                    "DELETE FROM orders WHERE id = ANY(\(ids)) AND state = 'expired' RETURNING id", logger
                ).count
            }
        }
        if let date = cutoffs.deliveredWebhooks {
            counts.webhookEvents += try await rows(
                """
                DELETE FROM webhook_events WHERE id IN (SELECT id FROM webhook_events
                WHERE state = 'delivered' AND delivered_at < \(date) LIMIT \(limit) FOR UPDATE SKIP LOCKED) RETURNING id
                """
            ).count
        }
        if let date = cutoffs.failedWebhooks {
            counts.webhookEvents += try await rows(
                """
                DELETE FROM webhook_events WHERE id IN (SELECT id FROM webhook_events
                WHERE state IN ('failed', 'skipped') AND created_at < \(date) LIMIT \(limit) FOR UPDATE SKIP LOCKED) RETURNING id
                """
            ).count
        }
        if let date = cutoffs.finishedTokenEvents {
            counts.tokenEvents = try await purgeTokenEvents(finishedBefore: date, limit: limit)
        }
        return counts
    }
}
