import ApplePay
import Foundation
import OrchardCore

// One forwarding protocol per repository: a type that conforms to one, giving the repository
// to forward to, gets every call of that repository forwarded, and implements only what it
// changes. The extensions implement every requirement (none of the repositories has a default
// of its own), so a requirement added to a repository without its forward here does not compile.

/// Forwards every ``OrderPayments`` call to ``orderPaymentsTarget``.
public protocol ForwardingOrderPayments: OrderPayments {
    var orderPaymentsTarget: any OrderPayments { get }
}

extension ForwardingOrderPayments {
    public func insert(_ order: OrderRecord) async throws { try await orderPaymentsTarget.insert(order) }
    public func order(id: String) async throws -> OrderRecord? { try await orderPaymentsTarget.order(id: id) }
    public func updateOpen(_ order: OrderRecord) async throws { try await orderPaymentsTarget.updateOpen(order) }
    public func claimPayment(_ claim: PaymentClaim) async throws -> PaymentRecord { try await orderPaymentsTarget.claimPayment(claim) }
    public func transition(_ change: PaymentTransition) async throws -> PaymentRecord? {
        try await orderPaymentsTarget.transition(change)
    }
    public func retryPayload(paymentId: String) async throws -> [UInt8]? {
        try await orderPaymentsTarget.retryPayload(paymentId: paymentId)
    }
    public func leasePaymentsForReconciliation(at date: Date, until leaseEnd: Date, limit: Int) async throws -> [PaymentRecord] {
        try await orderPaymentsTarget.leasePaymentsForReconciliation(at: date, until: leaseEnd, limit: limit)
    }
    public func stalePendingPayments(before date: Date) async throws -> [PaymentRecord] {
        try await orderPaymentsTarget.stalePendingPayments(before: date)
    }
    public func claimOperation(paymentId: String, in state: PaymentState, at date: Date, until leaseEnd: Date) async throws -> Bool {
        try await orderPaymentsTarget.claimOperation(paymentId: paymentId, in: state, at: date, until: leaseEnd)
    }
    public func releaseOperation(paymentId: String) async throws { try await orderPaymentsTarget.releaseOperation(paymentId: paymentId) }
    public func deferReconciliation(paymentId: String, until date: Date?) async throws -> Bool {
        try await orderPaymentsTarget.deferReconciliation(paymentId: paymentId, until: date)
    }
    public func payments(orderId: String) async throws -> [PaymentRecord] { try await orderPaymentsTarget.payments(orderId: orderId) }
    public func payment(id: String) async throws -> PaymentRecord? { try await orderPaymentsTarget.payment(id: id) }
    public func payments(state: PaymentState?, limit: Int) async throws -> [PaymentRecord] {
        try await orderPaymentsTarget.payments(state: state, limit: limit)
    }
}

/// Forwards every ``Refunds`` call to ``refundsTarget``.
public protocol ForwardingRefunds: Refunds {
    var refundsTarget: any Refunds { get }
}

extension ForwardingRefunds {
    public func claimRefund(_ draft: RefundRecord) async throws -> RefundRecord { try await refundsTarget.claimRefund(draft) }
    public func finishRefund(id: String, from: RefundState, state: RefundState, outcome: RefundOutcome?, at date: Date) async throws
        -> RefundRecord?
    {
        try await refundsTarget.finishRefund(id: id, from: from, state: state, outcome: outcome, at: date)
    }
    public func deferRefund(id: String, until date: Date) async throws -> Bool { try await refundsTarget.deferRefund(id: id, until: date) }
    public func refunds(paymentId: String) async throws -> [RefundRecord] { try await refundsTarget.refunds(paymentId: paymentId) }
    public func leaseRefundsToReconcile(at date: Date, until leaseEnd: Date, pendingBefore: Date, maximumSends: Int, limit: Int)
        async throws -> [RefundRecord]
    {
        try await refundsTarget.leaseRefundsToReconcile(
            at: date, until: leaseEnd, pendingBefore: pendingBefore, maximumSends: maximumSends, limit: limit)
    }
}

/// Forwards every ``MandateRecords`` call to ``mandateRecordsTarget``.
public protocol ForwardingMandateRecords: MandateRecords {
    var mandateRecordsTarget: any MandateRecords { get }
}

extension ForwardingMandateRecords {
    public func mandate(id: String) async throws -> MandateRecord? { try await mandateRecordsTarget.mandate(id: id) }
    public func mandates(merchantIdentifier: String, state: MandateRecord.State?, limit: Int) async throws -> [MandateRecord] {
        try await mandateRecordsTarget.mandates(merchantIdentifier: merchantIdentifier, state: state, limit: limit)
    }
    public func mandates(merchantIdentifier: String, merchantTokenIdentifier: String) async throws -> [MandateRecord] {
        try await mandateRecordsTarget.mandates(merchantIdentifier: merchantIdentifier, merchantTokenIdentifier: merchantTokenIdentifier)
    }
    public func endMandate(id: String, reason: String, at date: Date) async throws -> MandateRecord? {
        try await mandateRecordsTarget.endMandate(id: id, reason: reason, at: date)
    }
    public func updateMandate(id: String, metadata: DecryptedPayment.MerchantTokenMetadata?, at date: Date) async throws -> MandateRecord? {
        try await mandateRecordsTarget.updateMandate(id: id, metadata: metadata, at: date)
    }
}

/// Forwards every ``PaymentRequests`` call to ``paymentRequestsTarget``.
public protocol ForwardingPaymentRequests: PaymentRequests {
    var paymentRequestsTarget: any PaymentRequests { get }
}

extension ForwardingPaymentRequests {
    public func createPaymentRequest(_ request: PaymentRequestRecord, order: OrderRecord) async throws -> (
        record: PaymentRequestRecord, created: Bool
    ) { try await paymentRequestsTarget.createPaymentRequest(request, order: order) }
    public func paymentRequest(id: String) async throws -> PaymentRequestRecord? { try await paymentRequestsTarget.paymentRequest(id: id) }
    public func expireOrders(at date: Date, limit: Int) async throws -> [String] {
        try await paymentRequestsTarget.expireOrders(at: date, limit: limit)
    }
}

/// Forwards every ``APIKeys`` call to ``apiKeysTarget``.
public protocol ForwardingAPIKeys: APIKeys {
    var apiKeysTarget: any APIKeys { get }
}

extension ForwardingAPIKeys {
    public func insertAPIKey(_ key: APIKeyRecord) async throws { try await apiKeysTarget.insertAPIKey(key) }
    public func apiKey(id: String) async throws -> APIKeyRecord? { try await apiKeysTarget.apiKey(id: id) }
    public func apiKeys(merchantIdentifier: String?) async throws -> [APIKeyRecord] {
        try await apiKeysTarget.apiKeys(merchantIdentifier: merchantIdentifier)
    }
    public func revokeAPIKey(id: String, at date: Date) async throws -> Bool { try await apiKeysTarget.revokeAPIKey(id: id, at: date) }
}

/// Forwards every ``WebhookOutbox`` call to ``webhookOutboxTarget``.
public protocol ForwardingWebhookOutbox: WebhookOutbox {
    var webhookOutboxTarget: any WebhookOutbox { get }
}

extension ForwardingWebhookOutbox {
    public func leaseWebhookEvents(at date: Date, until leaseEnd: Date, fairly lease: WebhookLease) async throws -> [WebhookEvent] {
        try await webhookOutboxTarget.leaseWebhookEvents(at: date, until: leaseEnd, fairly: lease)
    }
    public func recordDelivery(_ result: WebhookDeliveryResult) async throws -> Bool {
        try await webhookOutboxTarget.recordDelivery(result)
    }
    public func webhookEvents(merchantIdentifier: String?, state: WebhookEvent.DeliveryState?, limit: Int) async throws -> [WebhookEvent] {
        try await webhookOutboxTarget.webhookEvents(merchantIdentifier: merchantIdentifier, state: state, limit: limit)
    }
    public func webhookEvent(id: String) async throws -> WebhookEvent? { try await webhookOutboxTarget.webhookEvent(id: id) }
    public func replayWebhookEvent(id: String, at date: Date) async throws -> Bool {
        try await webhookOutboxTarget.replayWebhookEvent(id: id, at: date)
    }
}

/// Forwards every ``TokenEventInbox`` call to ``tokenEventInboxTarget``.
public protocol ForwardingTokenEventInbox: TokenEventInbox {
    var tokenEventInboxTarget: any TokenEventInbox { get }
}

extension ForwardingTokenEventInbox {
    public func recordTokenEvent(_ item: TokenEventItem, maxPendingFromSource: Int) async throws -> TokenEventRecording {
        try await tokenEventInboxTarget.recordTokenEvent(item, maxPendingFromSource: maxPendingFromSource)
    }
    public func leaseTokenEvents(at date: Date, until leaseEnd: Date, perSource: Int, limit: Int) async throws -> [TokenEventItem] {
        try await tokenEventInboxTarget.leaseTokenEvents(at: date, until: leaseEnd, perSource: perSource, limit: limit)
    }
    public func recordTokenEventAttempt(_ attempt: TokenEventAttempt) async throws -> Bool {
        try await tokenEventInboxTarget.recordTokenEventAttempt(attempt)
    }
    public func tokenEventStandings(sources: [String]) async throws -> [String: TokenEventSourceStanding] {
        try await tokenEventInboxTarget.tokenEventStandings(sources: sources)
    }
    public func tokenEvent(merchantIdentifier: String, eventId: String) async throws -> TokenEventItem? {
        try await tokenEventInboxTarget.tokenEvent(merchantIdentifier: merchantIdentifier, eventId: eventId)
    }
}

/// Forwards every ``MerchantRegistry`` call to ``merchantRegistryTarget``.
public protocol ForwardingMerchantRegistry: MerchantRegistry {
    var merchantRegistryTarget: any MerchantRegistry { get }
}

extension ForwardingMerchantRegistry {
    public func registeredMerchants() async throws -> [RegisteredMerchant] { try await merchantRegistryTarget.registeredMerchants() }
    public func saveRegistration(_ merchant: RegisteredMerchant) async throws {
        try await merchantRegistryTarget.saveRegistration(merchant)
    }
    public func deleteRegistration(partnerIdentifier: String, at date: Date) async throws {
        try await merchantRegistryTarget.deleteRegistration(partnerIdentifier: partnerIdentifier, at: date)
    }
    public func sealedMerchantSettings() async throws -> [String: [UInt8]] { try await merchantRegistryTarget.sealedMerchantSettings() }
    public func saveSealedMerchantSettings(partnerIdentifier: String, sealed: [UInt8], at date: Date) async throws {
        try await merchantRegistryTarget.saveSealedMerchantSettings(partnerIdentifier: partnerIdentifier, sealed: sealed, at: date)
    }
}

/// Forwards every ``GuardRecords`` call to ``guardRecordsTarget``.
public protocol ForwardingGuardRecords: GuardRecords {
    var guardRecordsTarget: any GuardRecords { get }
}

extension ForwardingGuardRecords {
    public func syncGuardSubjects(_ subjects: Set<GuardSubject>, at date: Date) async throws {
        try await guardRecordsTarget.syncGuardSubjects(subjects, at: date)
    }
    public func leaseGuardChecks(at date: Date, until leaseEnd: Date, limit: Int) async throws -> [GuardRecord] {
        try await guardRecordsTarget.leaseGuardChecks(at: date, until: leaseEnd, limit: limit)
    }
    public func recordGuardCheck(_ record: GuardRecord, events: [WebhookEvent]) async throws -> Bool {
        try await guardRecordsTarget.recordGuardCheck(record, events: events)
    }
    public func guardRecords(merchantIdentifier: String?) async throws -> [GuardRecord] {
        try await guardRecordsTarget.guardRecords(merchantIdentifier: merchantIdentifier)
    }
}

/// Forwards the ``RecordPurging`` call to ``recordPurgingTarget``.
public protocol ForwardingRecordPurging: RecordPurging {
    var recordPurgingTarget: any RecordPurging { get }
}

extension ForwardingRecordPurging {
    public func purge(before cutoffs: PurgeCutoffs, limit: Int) async throws -> PurgeCounts {
        try await recordPurgingTarget.purge(before: cutoffs, limit: limit)
    }
}

/// Forwards the ``OperationalCounting`` call to ``operationalCountingTarget``.
public protocol ForwardingOperationalCounting: OperationalCounting {
    var operationalCountingTarget: any OperationalCounting { get }
}

extension ForwardingOperationalCounting {
    public func operationalCounts() async throws -> OperationalCounts? { try await operationalCountingTarget.operationalCounts() }
    public func checkAvailable() async throws { try await operationalCountingTarget.checkAvailable() }
}
