import Foundation
import OrchardCore
import Synchronization

/// Wallet orders in memory, with the SQLite store's semantics.
extension InMemoryStore {
    public func createWalletOrder(_ order: WalletOrderRecord) async throws -> (record: WalletOrderRecord, created: Bool) {
        try state.withLock { state in
            if let existing = state.walletOrders.first(where: { $0.paymentId == order.paymentId }) { return (existing, false) }
            guard !state.walletOrders.contains(where: { Self.same($0, order.orderTypeIdentifier, order.orderIdentifier) }) else {
                throw StoreError(code: .storage, message: "wallet order \(order.orderIdentifier) exists")
            }
            state.walletOrders.append(order)
            return (order, true)
        }
    }

    public func walletOrder(orderTypeIdentifier: String, orderIdentifier: String) async throws -> WalletOrderRecord? {
        state.withLock { state in state.walletOrders.first { Self.same($0, orderTypeIdentifier, orderIdentifier) } }
    }

    public func walletOrder(paymentId: String) async throws -> WalletOrderRecord? {
        state.withLock { state in state.walletOrders.first { $0.paymentId == paymentId } }
    }

    public func updateWalletOrder(_ next: WalletOrderRecord, event: WebhookEvent?) async throws -> Int? {
        state.withLock { state in
            guard
                let index = state.walletOrders.firstIndex(where: {
                    Self.same($0, next.orderTypeIdentifier, next.orderIdentifier) && $0.version == next.version - 1
                })
            else { return nil }
            state.walletOrders[index] = next
            let devices = state.walletRegistrations.filter {
                $0.orderTypeIdentifier == next.orderTypeIdentifier && $0.orderIdentifier == next.orderIdentifier
            }
            for device in devices
            where !state.walletPushes.contains(where: {
                $0.pushToken == device.pushToken && $0.orderTypeIdentifier == device.orderTypeIdentifier
            }) {
                state.walletPushes.append(
                    WalletOrderPush(
                        id: RecordIdentifier.random(), merchantIdentifier: next.merchantIdentifier,
                        orderTypeIdentifier: next.orderTypeIdentifier, pushToken: device.pushToken, createdAt: next.updatedAt,
                        nextAttemptAt: next.updatedAt))
            }
            if let event { state.events.append(event) }
            return devices.count
        }
    }

    public func registerWalletDevice(_ registration: WalletOrderRegistration, limit: Int) async throws -> Bool? {
        state.withLock { state in
            let isOrders = { (other: WalletOrderRegistration) in
                other.orderTypeIdentifier == registration.orderTypeIdentifier && other.orderIdentifier == registration.orderIdentifier
            }
            if let index = state.walletRegistrations.firstIndex(where: {
                isOrders($0) && $0.deviceIdentifier == registration.deviceIdentifier
            }) {
                state.walletRegistrations[index].pushToken = registration.pushToken
                return false
            }
            guard state.walletRegistrations.count(where: isOrders) < limit else { return nil }
            state.walletRegistrations.append(registration)
            return true
        }
    }

    public func unregisterWalletDevice(deviceIdentifier: String, orderTypeIdentifier: String, orderIdentifier: String) async throws
        -> Bool
    {
        state.withLock { state in
            let before = state.walletRegistrations.count
            state.walletRegistrations.removeAll {
                $0.deviceIdentifier == deviceIdentifier && $0.orderTypeIdentifier == orderTypeIdentifier
                    && $0.orderIdentifier == orderIdentifier
            }
            return state.walletRegistrations.count < before
        }
    }

    public func walletOrders(deviceIdentifier: String, orderTypeIdentifier: String, changedAfter since: Date?, limit: Int) async throws
        -> [WalletOrderRecord]
    {
        state.withLock { state in
            let registered = Set(
                state.walletRegistrations.filter {
                    $0.deviceIdentifier == deviceIdentifier && $0.orderTypeIdentifier == orderTypeIdentifier
                }
                .map(\.orderIdentifier))
            return state.walletOrders.filter {
                $0.orderTypeIdentifier == orderTypeIdentifier && registered.contains($0.orderIdentifier)
                    && Self.changed($0, after: since)
            }
            .sorted { ($0.updatedAt, $0.orderIdentifier) < ($1.updatedAt, $1.orderIdentifier) }.prefix(max(limit, 0)).map { $0 }
        }
    }

    public func leaseWalletPushes(at date: Date, until leaseEnd: Date, limit: Int) async throws -> [WalletOrderPush] {
        state.withLock { state in
            let due = state.walletPushes.indices.filter { state.walletPushes[$0].nextAttemptAt <= date }
                .sorted { (state.walletPushes[$0].nextAttemptAt, $0) < (state.walletPushes[$1].nextAttemptAt, $1) }
                .prefix(max(limit, 0))
            for index in due { state.walletPushes[index].nextAttemptAt = leaseEnd }
            return due.map { state.walletPushes[$0] }
        }
    }

    public func recordWalletPush(_ push: WalletOrderPush, outcome: WalletOrderPushOutcome) async throws -> Bool {
        state.withLock { state in
            guard let index = state.walletPushes.firstIndex(where: { $0.id == push.id && $0.attempts == push.attempts }) else {
                return false
            }
            switch outcome {
            case .retry(let at, _):
                state.walletPushes[index].attempts += 1
                state.walletPushes[index].nextAttemptAt = at
            case .delivered, .dropped:
                state.walletPushes.remove(at: index)
            case .unregistered:
                state.walletPushes.remove(at: index)
                state.walletRegistrations.removeAll { $0.pushToken == push.pushToken && $0.orderTypeIdentifier == push.orderTypeIdentifier }
            }
            return true
        }
    }

    static func changed(_ order: WalletOrderRecord, after since: Date?) -> Bool {
        guard let since else { return true }
        return order.updatedAt > since
    }

    static func same(_ order: WalletOrderRecord, _ type: String, _ id: String) -> Bool {
        order.orderTypeIdentifier == type && order.orderIdentifier == id
    }
}
