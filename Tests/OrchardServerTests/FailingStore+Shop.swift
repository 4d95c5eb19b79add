import ApplePay
import Foundation
import OrchardCore
import Synchronization

/// The payments API's part of the store, passed through; refunds' outcomes fail like transitions.
extension FailingStore {
    func insertAPIKey(_ key: APIKeyRecord) async throws { try await inner.insertAPIKey(key) }
    func apiKey(id: String) async throws -> APIKeyRecord? { try await inner.apiKey(id: id) }
    func apiKeys(merchantIdentifier: String?) async throws -> [APIKeyRecord] {
        try await inner.apiKeys(merchantIdentifier: merchantIdentifier)
    }
    func revokeAPIKey(id: String, at date: Date) async throws -> Bool { try await inner.revokeAPIKey(id: id, at: date) }
    func createPaymentRequest(_ request: PaymentRequestRecord, order: OrderRecord) async throws -> (
        record: PaymentRequestRecord, created: Bool
    ) { try await inner.createPaymentRequest(request, order: order) }
    func paymentRequest(id: String) async throws -> PaymentRequestRecord? { try await inner.paymentRequest(id: id) }
    func expireOrders(at date: Date, limit: Int) async throws -> [String] { try await inner.expireOrders(at: date, limit: limit) }
    func purge(before cutoffs: PurgeCutoffs, limit: Int) async throws -> PurgeCounts {
        try await inner.purge(before: cutoffs, limit: limit)
    }
    func claimRefund(_ draft: RefundRecord) async throws -> RefundRecord { try await inner.claimRefund(draft) }
    func finishRefund(id: String, from: RefundState, state: RefundState, outcome: RefundOutcome?, at date: Date) async throws
        -> RefundRecord?
    {
        if failing.load(ordering: .relaxed) { throw DiskFull() }
        return try await inner.finishRefund(id: id, from: from, state: state, outcome: outcome, at: date)
    }
    func deferRefund(id: String, until date: Date) async throws -> Bool { try await inner.deferRefund(id: id, until: date) }
    func refunds(paymentId: String) async throws -> [RefundRecord] { try await inner.refunds(paymentId: paymentId) }
    func leaseRefundsToReconcile(at date: Date, until leaseEnd: Date, pendingBefore: Date, maximumSends: Int, limit: Int)
        async throws -> [RefundRecord]
    {
        try await inner.leaseRefundsToReconcile(
            at: date, until: leaseEnd, pendingBefore: pendingBefore, maximumSends: maximumSends, limit: limit)
    }
    func leaseWebhookEvents(at date: Date, until leaseEnd: Date, fairly lease: WebhookLease) async throws -> [WebhookEvent] {
        try await inner.leaseWebhookEvents(at: date, until: leaseEnd, fairly: lease)
    }
    func recordDelivery(_ result: WebhookDeliveryResult) async throws -> Bool { try await inner.recordDelivery(result) }
    func webhookEvents(merchantIdentifier: String?, state: WebhookEvent.DeliveryState?, limit: Int) async throws -> [WebhookEvent] {
        try await inner.webhookEvents(merchantIdentifier: merchantIdentifier, state: state, limit: limit)
    }
    func webhookEvent(id: String) async throws -> WebhookEvent? { try await inner.webhookEvent(id: id) }
    func replayWebhookEvent(id: String, at date: Date) async throws -> Bool { try await inner.replayWebhookEvent(id: id, at: date) }
    func sealedMerchantSettings() async throws -> [String: [UInt8]] { try await inner.sealedMerchantSettings() }
    func saveSealedMerchantSettings(partnerIdentifier: String, sealed: [UInt8], at date: Date) async throws {
        try await inner.saveSealedMerchantSettings(partnerIdentifier: partnerIdentifier, sealed: sealed, at: date)
    }
}

/// Mandates, passed through; their changes fail like transitions.
extension FailingStore {
    func mandate(id: String) async throws -> MandateRecord? { try await inner.mandate(id: id) }
    func mandates(merchantIdentifier: String, state: MandateRecord.State?, limit: Int) async throws -> [MandateRecord] {
        try await inner.mandates(merchantIdentifier: merchantIdentifier, state: state, limit: limit)
    }
    func mandates(merchantIdentifier: String, merchantTokenIdentifier: String) async throws -> [MandateRecord] {
        try await inner.mandates(merchantIdentifier: merchantIdentifier, merchantTokenIdentifier: merchantTokenIdentifier)
    }
    func endMandate(id: String, reason: String, at date: Date) async throws -> MandateRecord? {
        if failing.load(ordering: .relaxed) { throw DiskFull() }
        return try await inner.endMandate(id: id, reason: reason, at: date)
    }
    func updateMandate(id: String, metadata: DecryptedPayment.MerchantTokenMetadata?, at date: Date) async throws -> MandateRecord? {
        if failing.load(ordering: .relaxed) { throw DiskFull() }
        return try await inner.updateMandate(id: id, metadata: metadata, at: date)
    }
}

/// The token-event inbox, passed through; recording a fetch fails like a transition.
extension FailingStore {
    func recordTokenEvent(_ item: TokenEventItem, maxPendingFromSource: Int) async throws -> TokenEventRecording {
        try await inner.recordTokenEvent(item, maxPendingFromSource: maxPendingFromSource)
    }
    func leaseTokenEvents(at date: Date, until leaseEnd: Date, perSource: Int, limit: Int) async throws -> [TokenEventItem] {
        try await inner.leaseTokenEvents(at: date, until: leaseEnd, perSource: perSource, limit: limit)
    }
    func recordTokenEventAttempt(_ attempt: TokenEventAttempt) async throws -> Bool {
        if failing.load(ordering: .relaxed) { throw DiskFull() }
        return try await inner.recordTokenEventAttempt(attempt)
    }
    func tokenEventStandings(sources: [String]) async throws -> [String: TokenEventSourceStanding] {
        try await inner.tokenEventStandings(sources: sources)
    }
    func tokenEvent(merchantIdentifier: String, eventId: String) async throws -> TokenEventItem? {
        try await inner.tokenEvent(merchantIdentifier: merchantIdentifier, eventId: eventId)
    }
}
