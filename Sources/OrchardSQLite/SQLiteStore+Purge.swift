import Foundation
import OrchardCore

/// Retention: deleting what has served its purpose (never payments or refunds).
extension SQLiteStore {
    public func purge(before cutoffs: PurgeCutoffs, limit: Int) async throws -> PurgeCounts {
        var counts = PurgeCounts()
        if let date = cutoffs.expiredOrders {
            counts.orders = try await purgeExpiredOrders(before: date, limit: limit)
        }
        if let date = cutoffs.deliveredWebhooks {
            counts.webhookEvents += try await deleteEvents("state = 'delivered' AND delivered_at < \(date)", limit: limit)
        }
        if let date = cutoffs.failedWebhooks {
            counts.webhookEvents += try await deleteEvents("state IN ('failed', 'skipped') AND created_at < \(date)", limit: limit)
        }
        if let date = cutoffs.finishedTokenEvents {
            counts.tokenEvents = try await purgeTokenEvents(finishedBefore: date, limit: limit)
        }
        return counts
    }

    private func purgeExpiredOrders(before date: Date, limit: Int) async throws -> Int {
        try await database.run { db in
            let ids = try db.query(
                """
                SELECT id FROM orders WHERE state = 'expired' AND expires_at < \(date)
                AND NOT EXISTS (SELECT 1 FROM payments WHERE payments.order_id = orders.id) LIMIT \(limit)
                """
            ).map { $0.text("id") }
            for id in ids {
                try db.execute("DELETE FROM payment_requests WHERE id = \(id)")
                try db.execute("DELETE FROM orders WHERE id = \(id) AND state = 'expired'")
            }
            return ids.count
        }
    }

    private func deleteEvents(_ condition: SQLiteStatement, limit: Int) async throws -> Int {
        try await write("DELETE FROM webhook_events WHERE rowid IN (SELECT rowid FROM webhook_events WHERE \(condition) LIMIT \(limit))")
    }
}
