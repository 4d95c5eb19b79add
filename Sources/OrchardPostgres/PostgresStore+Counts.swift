import Foundation
import OrchardCore
import PostgresNIO

/// What the metrics gauges show, counted from the indexes.
extension PostgresStore {
    /// A round trip on a pooled connection, within the store's acquire timeout.
    public func checkAvailable() async throws {
        _ = try await rows("SELECT 1")
    }

    public func operationalCounts() async throws -> OperationalCounts? {
        var payments: [PaymentState: Int] = [:]
        for row in try await rows("SELECT state, COUNT(*) AS n FROM payments GROUP BY state") {
            guard let state = PaymentState(rawValue: try row.text("state")) else { continue }
            payments[state] = Int(try row.integer("n"))
        }
        let outbox = try await rows(
            "SELECT COUNT(*) AS n, MIN(created_at) AS oldest FROM webhook_events WHERE state = 'pending'"
        ).first
        let inbox = try await rows(
            "SELECT COUNT(*) AS n, MIN(created_at) AS oldest FROM token_events WHERE state = 'pending'"
        ).first
        // The first entry of payments_by_state (state, created_at) for 'unknown': one index seek.
        let unknown = try await rows("SELECT MIN(created_at) AS oldest FROM payments WHERE state = 'unknown'").first
        return OperationalCounts(
            payments: payments, pendingWebhooks: Int(try outbox?.integer("n") ?? 0),
            oldestPendingWebhook: try outbox?.optionalDate("oldest"), pendingTokenEvents: Int(try inbox?.integer("n") ?? 0),
            oldestPendingTokenEvent: try inbox?.optionalDate("oldest"), oldestUnknownPayment: try unknown?.optionalDate("oldest"))
    }
}
