import Foundation
import OrchardCore
import Synchronization

extension SQLiteStore {
    /// Four aggregate queries, each answered from an index (`payments_by_state` twice, `webhook_events_pending`, `token_events_due`).
    /// On a read connection: counting a backlog must not hold up the writer every commit waits for.
    /// A read, and while writes are failing a write that needs a new page (a full disk or
    /// `max_page_count` refuses it), rolled back by its own DELETE: the store is ready again only
    /// once a write goes through.
    public func checkAvailable() async throws {
        _ = try await rows("SELECT 1")
        guard database.writesFailing.load(ordering: .acquiring) else { return }
        try await database.run { db in
            try db.execute("INSERT INTO store_probe (id, filler) VALUES (1, zeroblob(8192))")
            try db.execute("DELETE FROM store_probe")
        }
        database.writesFailing.store(false, ordering: .releasing)
    }

    public func operationalCounts() async throws -> OperationalCounts? {
        try await database.read { db in
            var payments: [PaymentState: Int] = [:]
            for row in try db.query("SELECT state, COUNT(*) AS count FROM payments GROUP BY state") {
                guard let state: PaymentState = row.value("state") else { continue }
                payments[state] = row.int("count")
            }
            let pending = "SELECT COUNT(*) AS count, MIN(created_at) AS oldest FROM"
            let outbox = try db.query("\(unescaped: pending) webhook_events WHERE state = 'pending'").first
            let inbox = try db.query("\(unescaped: pending) token_events WHERE state = 'pending'").first
            // The first entry of (state, created_at) for 'unknown': one index seek.
            let unknown = try db.query("SELECT MIN(created_at) AS oldest FROM payments WHERE state = 'unknown'").first
            return OperationalCounts(
                payments: payments, pendingWebhooks: outbox?.int("count") ?? 0, oldestPendingWebhook: outbox?.optionalDate("oldest"),
                pendingTokenEvents: inbox?.int("count") ?? 0, oldestPendingTokenEvent: inbox?.optionalDate("oldest"),
                oldestUnknownPayment: unknown?.optionalDate("oldest"))
        }
    }
}
