import Foundation
import OrchardCore

extension SQLiteStore {
    /// Three aggregate queries, each answered from an index (`payments_by_state`, `webhook_events_due`, `token_events_due`).
    public func operationalCounts() async throws -> OperationalCounts? {
        try await database.run { db in
            var payments: [PaymentState: Int] = [:]
            for row in try db.query("SELECT state, COUNT(*) FROM payments GROUP BY state") {
                guard let state = row[0].text.flatMap(PaymentState.init(rawValue:)) else { continue }
                payments[state] = Int(row[1].integer ?? 0)
            }
            let outbox = try db.query("SELECT COUNT(*), MIN(created_at) FROM webhook_events WHERE state = 'pending'").first
            let inbox = try db.query("SELECT COUNT(*), MIN(created_at) FROM token_events WHERE state = 'pending'").first
            return OperationalCounts(
                payments: payments, pendingWebhooks: Int(outbox?[0].integer ?? 0),
                oldestPendingWebhook: outbox?[1].integer.map { Date(timeIntervalSince1970: TimeInterval($0)) },
                pendingTokenEvents: Int(inbox?[0].integer ?? 0),
                oldestPendingTokenEvent: inbox?[1].integer.map { Date(timeIntervalSince1970: TimeInterval($0)) })
        }
    }
}
