import ApplePay
import Foundation
import OrchardCore
import Synchronization

/// Payment requests in memory, with the SQLite store's semantics.
extension InMemoryStore {
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

    public func cancelOpenPaymentRequest(id: String, at date: Date) async throws -> Bool {
        try state.withLock { state in
            guard let order = state.orders[id], order.state == .open, let request = state.requests[id] else { return false }
            state.orders[id]?.state = .cancelled
            state.events.append(
                try WebhookEvent.make(
                    .paymentRequestCancelled, merchantIdentifier: order.merchantIdentifier, payment: nil, request: request, at: date))
            return true
        }
    }

    public func extendPaymentRequest(id: String, until: Date, at date: Date) async throws -> Bool {
        state.withLock { state in
            guard let order = state.orders[id], [.open, .pending, .unknown].contains(order.state), state.requests[id] != nil,
                let expiry = order.expiresAt, expiry > date, expiry < until
            else { return false }
            state.orders[id]?.expiresAt = until
            state.requests[id]?.expiresAt = until
            return true
        }
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
}
