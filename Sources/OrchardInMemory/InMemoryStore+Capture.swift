import Foundation
import OrchardCore
import Synchronization

/// Automatic captures due, in memory, with the SQLite store's semantics.
extension InMemoryStore {
    public func leasePaymentsForCapture(at date: Date, until leaseEnd: Date, limit: Int) async throws -> [PaymentRecord] {
        state.withLock { state in
            let due = state.payments.indices.filter {
                state.payments[$0].state == .authorized && (state.payments[$0].captureDueAt.map { $0 <= date } ?? false)
            }
            let leased = due.sorted {
                (state.payments[$0].captureDueAt ?? .distantFuture, $0) < (state.payments[$1].captureDueAt ?? .distantFuture, $1)
            }.prefix(limit)
            for index in leased { state.payments[index].captureDueAt = leaseEnd }
            return leased.map { state.payments[$0] }
        }
    }

    public func recordCaptureRefusal(_ refusal: CaptureRefusal) async throws -> PaymentRecord? {
        try state.withLock { state in
            guard let index = state.payments.firstIndex(where: { $0.id == refusal.paymentId }),
                state.payments[index].state == .authorized, state.payments[index].captureDueAt != nil,
                state.payments[index].captureAttempts == refusal.refusalsBefore
            else { return nil }
            let payment = refusal.applied(to: state.payments[index])
            if let type = refusal.event { try Self.appendPaymentEvent(type, payment: payment, to: &state, at: refusal.at) }
            state.payments[index] = payment
            return payment
        }
    }
}
