import ApplePay
import Foundation
import OrchardCore
import Synchronization

/// API keys, payment requests, refunds and the webhook outbox, in memory, with the SQLite store's semantics.
extension InMemoryStore {
    public func insertAPIKey(_ key: APIKeyRecord) async throws {
        try state.withLock { state in
            let active = state.apiKeys.count { $0.merchantIdentifier == key.merchantIdentifier && $0.revokedAt == nil }
            try APIKeyRecord.checkCap(adding: key, active: Int(active))
            state.apiKeys.append(key)
        }
    }

    public func apiKey(id: String) async throws -> APIKeyRecord? {
        state.withLock { $0.apiKeys.first { $0.id == id } }
    }

    public func apiKeys(merchantIdentifier: String?) async throws -> [APIKeyRecord] {
        state.withLock { state in
            state.apiKeys.enumerated().filter { merchantIdentifier == nil || $0.element.merchantIdentifier == merchantIdentifier }
                .sorted {
                    ($0.element.merchantIdentifier, $0.element.createdAt, $0.offset) < (
                        $1.element.merchantIdentifier, $1.element.createdAt, $1.offset
                    )
                }
                .map(\.element)
        }
    }

    public func revokeAPIKey(id: String, at date: Date) async throws -> Bool {
        state.withLock { state in
            guard let index = state.apiKeys.firstIndex(where: { $0.id == id && $0.revokedAt == nil }) else { return false }
            state.apiKeys[index].revokedAt = date
            return true
        }
    }

    public func createPaymentRequest(_ request: PaymentRequestRecord, order: OrderRecord) async throws -> (
        record: PaymentRequestRecord, created: Bool
    ) {
        try state.withLock { state in
            if let earlier = state.requests.values.first(where: {
                $0.merchantIdentifier == request.merchantIdentifier && $0.idempotencyKey == request.idempotencyKey
            }) {
                return (try earlier.replay(for: request), false)
            }
            state.orders[order.id] = order
            state.requests[request.id] = request
            return (request, true)
        }
    }

    public func paymentRequest(id: String) async throws -> PaymentRequestRecord? {
        state.withLock { $0.requests[id] }
    }

    public func expireOrders(at date: Date, limit: Int) async throws -> [String] {
        try state.withLock { state in
            let due = state.orders.values.filter { $0.state == .open && ($0.expiresAt.map { $0 <= date } ?? false) }.prefix(limit)
            for order in due {
                state.orders[order.id]?.state = .expired
                guard let request = state.requests[order.id] else { continue }
                state.events.append(
                    try WebhookEvent.make(
                        .paymentRequestExpired, merchantIdentifier: order.merchantIdentifier, payment: nil, request: request, at: date))
            }
            return due.map(\.id)
        }
    }

    public func claimRefund(_ draft: RefundRecord) async throws -> RefundRecord {
        try state.withLock { state in
            let mine = state.refunds.filter { $0.paymentId == draft.paymentId }
            let snapshot = RefundClaimSnapshot(
                payment: state.payments.first { $0.id == draft.paymentId }.map {
                    .init(state: $0.state, amount: $0.amount, reference: $0.reference)
                },
                earlier: mine.first { $0.idempotencyKey == draft.idempotencyKey },
                held: Money.sum(mine.filter(\.holdsAmount).map(\.amount)) ?? .max, count: mine.count)
            let decision = try RefundPolicy.decide(draft, snapshot)
            switch decision {
            case .existing: break
            case .resend(let resent):
                guard let index = state.refunds.firstIndex(where: { $0.id == resent.id }) else { break }
                state.refunds[index] = resent
            case .new(let refund):
                state.refunds.append(refund)
            }
            return decision.refund
        }
    }

    public func finishRefund(id: String, from: RefundState, state refundState: RefundState, outcome: RefundOutcome?, at date: Date)
        async throws -> RefundRecord?
    {
        try state.withLock { state in
            guard let index = state.refunds.firstIndex(where: { $0.id == id && $0.state == from }) else { return nil }
            state.refunds[index].state = refundState
            state.refunds[index].processorReference = outcome?.processorReference ?? state.refunds[index].processorReference
            state.refunds[index].processorCode = outcome?.code
            state.refunds[index].processorMessage = outcome?.message
            state.refunds[index].updatedAt = date
            let refund = state.refunds[index]
            if refundState == .refunded, let payment = state.payments.first(where: { $0.id == refund.paymentId }) {
                try Self.appendPaymentEvent(.paymentRefunded, payment: payment, refund: refund, to: &state, at: date)
            }
            return refund
        }
    }

    public func leaseRefundsToReconcile(at date: Date, until leaseEnd: Date, pendingBefore: Date, maximumSends: Int, limit: Int)
        async throws -> [RefundRecord]
    {
        state.withLock { state in
            let leases = state.refundLeases
            let candidates = state.refunds.enumerated().filter { _, refund in
                (leases[refund.id].map { $0 <= date } ?? true)
                    && ((refund.state == .unknown && refund.sends <= maximumSends)
                        || (refund.state == .pending && refund.updatedAt < pendingBefore))
            }
            let leased = candidates.sorted { ($0.element.updatedAt, $0.offset) < ($1.element.updatedAt, $1.offset) }.prefix(limit)
                .map(\.element)
            for refund in leased { state.refundLeases[refund.id] = leaseEnd }
            return leased
        }
    }

    public func deferRefund(id: String, until date: Date) async throws -> Bool {
        state.withLock { state in
            guard state.refunds.contains(where: { $0.id == id && $0.state == .unknown }) else { return false }
            state.refundLeases[id] = date
            return true
        }
    }

    public func refunds(paymentId: String) async throws -> [RefundRecord] {
        state.withLock { $0.refunds.filter { $0.paymentId == paymentId } }
    }

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

    public func sealedMerchantSettings() async throws -> [String: [UInt8]] {
        state.withLock { $0.settings }
    }

    public func saveSealedMerchantSettings(partnerIdentifier: String, sealed: [UInt8], at date: Date) async throws {
        state.withLock { $0.settings[partnerIdentifier] = sealed }
    }
}

extension InMemoryStore {
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
