import ApplePay
import Foundation
import OrchardCore
import Synchronization

/// The webhook outbox in memory, with the SQLite store's semantics.
extension InMemoryStore {
    static func appendPaymentEvent(
        _ type: WebhookEventType, payment: PaymentRecord, refund: RefundRecord? = nil, to state: inout State, at date: Date
    ) throws {
        let refunded = state.refunds.filter { $0.paymentId == payment.id && $0.state == .refunded }.reduce(0) { $0 + $1.amount }
        state.events.append(
            try WebhookEvent.make(
                type, merchantIdentifier: state.orders[payment.orderId]?.merchantIdentifier ?? "", payment: payment,
                request: state.requests[payment.orderId], refund: refund, refunded: refunded, at: date))
    }

    public func leaseWebhookEvents(at date: Date, until leaseEnd: Date, fairly lease: WebhookLease) async throws -> [WebhookEvent] {
        state.withLock { state in
            let due = state.events.indices.filter {
                state.events[$0].state == .pending && (state.events[$0].nextAttemptAt.map { $0 <= date } ?? false)
                    && !lease.excluding.contains(state.events[$0].merchantIdentifier)
            }.sorted { (state.events[$0].nextAttemptAt ?? date, $0) < (state.events[$1].nextAttemptAt ?? date, $1) }
            let leased = Self.fairly(
                due, group: { state.events[$0].merchantIdentifier }, groups: lease.merchants, perGroup: lease.perMerchant,
                total: lease.total)
            for index in leased { state.events[index].nextAttemptAt = leaseEnd }
            return leased.map { state.events[$0] }
        }
    }

    public func skipWebhookEvents(of merchants: Set<String>, at date: Date, reason: String) async throws -> Int {
        state.withLock { state in
            var skipped = 0
            for index in state.events.indices
            where state.events[index].state == .pending && merchants.contains(state.events[index].merchantIdentifier)
                && (state.events[index].nextAttemptAt.map { $0 <= date } ?? false)
            {
                state.events[index].state = .skipped
                state.events[index].attempts += 1
                state.events[index].nextAttemptAt = nil
                state.events[index].lastStatus = nil
                state.events[index].lastError = reason
                skipped += 1
            }
            return skipped
        }
    }

    public func recordDelivery(_ result: WebhookDeliveryResult) async throws -> Bool {
        state.withLock { state in
            guard
                let index = state.events.firstIndex(where: {
                    $0.id == result.eventId && $0.state == .pending && $0.attempts == result.attempt
                })
            else { return false }
            state.events[index].state = result.state
            state.events[index].attempts += 1
            state.events[index].nextAttemptAt = result.nextAttemptAt
            state.events[index].lastStatus = result.status
            state.events[index].lastError = result.error
            if result.state == .delivered { state.events[index].deliveredAt = result.at }
            return true
        }
    }

    public func webhookEvents(merchantIdentifier: String?, state wanted: WebhookEvent.DeliveryState?, limit: Int) async throws
        -> [WebhookEvent]
    {
        state.withLock { state in
            state.events.enumerated().filter {
                (merchantIdentifier == nil || $0.element.merchantIdentifier == merchantIdentifier)
                    && (wanted == nil || $0.element.state == wanted)
            }
            .sorted { ($0.element.createdAt, $0.offset) > ($1.element.createdAt, $1.offset) }
            .prefix(limit).map(\.element)
        }
    }

    public func webhookEvent(id: String) async throws -> WebhookEvent? {
        state.withLock { $0.events.first { $0.id == id } }
    }

    public func replayWebhookEvent(id: String, at date: Date) async throws -> Bool {
        state.withLock { state in
            guard let index = state.events.firstIndex(where: { $0.id == id }) else { return false }
            state.events[index].state = .pending
            state.events[index].nextAttemptAt = date
            return true
        }
    }

    /// The feed in the order of `state.events`: every event is appended under the store's lock,
    /// in the transaction (the locked block) that writes it, and purges only remove, so that
    /// order is commit order, and an event never appears before one already read.
    public func webhookEventFeed(of merchant: String, after: String?, limit: Int) async throws -> [WebhookEvent]? {
        state.withLock { state in
            var start = state.events.startIndex
            if let after {
                guard let index = state.events.firstIndex(where: { $0.id == after && $0.merchantIdentifier == merchant }) else {
                    return nil
                }
                start = index + 1
            }
            return Array(state.events[start...].lazy.filter { $0.merchantIdentifier == merchant }.prefix(max(0, limit)))
        }
    }

    /// The fair share both inboxes' leases take, in memory (the SQL stores take it in one
    /// statement): of the due items, oldest first, at most `perGroup` of each group, from at most
    /// `groups` groups, `total` in all.
    static func fairly(_ due: [Int], group: (Int) -> String, groups: Int = .max, perGroup: Int, total: Int) -> [Int] {
        var taken: [String: Int] = [:]
        var leased: [Int] = []
        for index in due where leased.count < total {
            let name = group(index)
            if taken[name] == nil, taken.count >= groups { continue }
            guard taken[name, default: 0] < perGroup else { continue }
            taken[name, default: 0] += 1
            leased.append(index)
        }
        return leased
    }
}
