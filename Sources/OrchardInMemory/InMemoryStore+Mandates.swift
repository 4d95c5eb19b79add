import ApplePay
import Foundation
import OrchardCore
import Synchronization

/// Mandates in memory, with the SQL stores' compare-and-set rules.
extension InMemoryStore {
    public func mandate(id: String) async throws -> MandateRecord? {
        state.withLock { $0.mandates.first { $0.id == id } }
    }

    public func mandates(merchantIdentifier: String, state wanted: MandateRecord.State?, limit: Int) async throws -> [MandateRecord] {
        state.withLock { state in
            Array(
                state.mandates.reversed().filter { $0.merchantIdentifier == merchantIdentifier && (wanted == nil || $0.state == wanted) }
                    .prefix(limit))
        }
    }

    public func mandates(merchantIdentifier: String, merchantTokenIdentifier: String) async throws -> [MandateRecord] {
        state.withLock { state in
            state.mandates.reversed().filter {
                $0.merchantIdentifier == merchantIdentifier && $0.merchantTokenIdentifier == merchantTokenIdentifier
            }
        }
    }

    public func endMandate(id: String, reason: String, at date: Date) async throws -> MandateRecord? {
        try change(id: id, event: .mandateEnded, at: date) { mandate in
            mandate.state = .ended
            mandate.endedReason = reason
            mandate.endedAt = date
        }
    }

    public func updateMandate(
        id: String, metadata: DecryptedPayment.MerchantTokenMetadata?, merchantToken: MerchantTokenDetails?, at date: Date
    ) async throws -> MandateRecord? {
        try change(id: id, event: .mandateUpdated, at: date) { mandate in
            mandate.merchantTokenMetadata = metadata
            mandate.merchantToken = merchantToken
        }
    }

    private func change(id: String, event: WebhookEventType, at date: Date, _ body: (inout MandateRecord) -> Void) throws
        -> MandateRecord?
    {
        try state.withLock { state in
            guard let index = state.mandates.firstIndex(where: { $0.id == id && $0.state == .active }) else { return nil }
            var mandate = state.mandates[index]
            body(&mandate)
            mandate.updatedAt = date
            state.events.append(try WebhookEvent.make(event, mandate: mandate, at: date))
            state.mandates[index] = mandate
            return mandate
        }
    }
}
