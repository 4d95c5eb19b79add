import Foundation
import OrchardCore
import Synchronization

extension InMemoryStore {
    public func purge(before cutoffs: PurgeCutoffs, limit: Int) async throws -> PurgeCounts {
        state.withLock { state in
            var counts = PurgeCounts()
            if let date = cutoffs.expiredOrders {
                let paid = Set(state.payments.map(\.orderId))
                let old = state.orders.values.filter {
                    $0.state == .expired && ($0.expiresAt.map { $0 < date } ?? false) && !paid.contains($0.id)
                }.prefix(limit)
                for order in old {
                    state.orders[order.id] = nil
                    state.requests[order.id] = nil
                }
                counts.orders = old.count
            }
            func drop(_ matches: (WebhookEvent) -> Bool) {
                let ids = Set(state.events.filter(matches).prefix(limit).map(\.id))
                state.events.removeAll { ids.contains($0.id) }
                counts.webhookEvents += ids.count
            }
            if let date = cutoffs.deliveredWebhooks {
                drop { $0.state == .delivered && ($0.deliveredAt.map { $0 < date } ?? false) }
            }
            if let date = cutoffs.failedWebhooks {
                drop { ($0.state == .failed || $0.state == .skipped) && $0.createdAt < date }
            }
            if let date = cutoffs.finishedTokenEvents {
                let ids = Set(
                    state.tokenEvents.filter { $0.state != .pending && ($0.finishedAt.map { $0 < date } ?? false) }.prefix(limit).map(\.id))
                state.tokenEvents.removeAll { ids.contains($0.id) }
                counts.tokenEvents = ids.count
            }
            return counts
        }
    }
}
