import Foundation
import OrchardCore
import Synchronization

/// ``OrchardStore`` in memory, for router tests and test doubles: the same compare-and-set
/// semantics as the SQLite store (a contract test runs both), nothing on disk.
public final class InMemoryStore: OrchardStore {
    struct State {
        var orders: [String: OrderRecord] = [:]
        /// In insertion order, like SQLite's rowid.
        var payments: [PaymentRecord] = []
        var payloads: [String: [UInt8]] = [:]
        /// Settles and cancels in progress: until when each payment is held.
        var operations: [String: Date] = [:]
        var transactions: Set<String> = []
        var merchants: [String: RegisteredMerchant] = [:]
        var apiKeys: [APIKeyRecord] = []
        var requests: [String: PaymentRequestRecord] = [:]
        var refunds: [RefundRecord] = []
        var events: [WebhookEvent] = []
        /// The token-event inbox, in insertion order.
        var tokenEvents: [TokenEventItem] = []
        var mandates: [MandateRecord] = []
        var settings: [String: [UInt8]] = [:]
        /// Registrations claimed for calls to Apple: holder and until when, by partner ID.
        var claims: [String: (holder: String, until: Date)] = [:]
        /// Until when a reconciler holds each refund.
        var refundLeases: [String: Date] = [:]
        var guardRecords: [GuardSubject: GuardRecord] = [:]
        /// Wallet orders in insertion order, the devices registered for them, and the pushes owed.
        var walletOrders: [WalletOrderRecord] = []
        var walletRegistrations: [WalletOrderRegistration] = []
        var walletPushes: [WalletOrderPush] = []
        /// Usage keys in insertion order, and usage announcements by merchant and token.
        var usageKeys: [UsageKeyRecord] = []
        var usageAnnouncements: [UsageAnnouncementKey: UsageAnnouncement] = [:]
    }

    struct UsageAnnouncementKey: Hashable {
        var merchant: String
        var token: String
    }

    let state = Mutex(State())

    public init() {}

    public func insert(_ order: OrderRecord) async throws {
        try state.withLock { state in
            guard state.orders[order.id] == nil else { throw StoreError(code: .storage, message: "order \(order.id) exists") }
            state.orders[order.id] = order
        }
    }

    public func order(id: String) async throws -> OrderRecord? {
        state.withLock { $0.orders[id] }
    }

    public func updateOpen(_ order: OrderRecord) async throws {
        try state.withLock { state in
            try OrderPricingPolicy.checkUpdate(order, found: state.orders[order.id].map { ($0.state, $0.priceVersion) })
            state.orders[order.id]?.priced = order.priced
            state.orders[order.id]?.priceVersion = order.priceVersion
        }
    }

    public func claimPayment(_ claim: PaymentClaim) async throws -> PaymentRecord {
        let draft = claim.draft
        return try state.withLock { state in
            let unknown = state.payments.lastIndex { $0.orderId == draft.orderId && $0.state == .unknown }
            let snapshot = PaymentClaimSnapshot(
                order: state.orders[draft.orderId].map { .init(state: $0.state, priceVersion: $0.priceVersion, expiresAt: $0.expiresAt) },
                transactionUsed: state.transactions.contains(claim.transactionId),
                unknownAttempt: unknown.map { .init(id: state.payments[$0].id, sends: state.payments[$0].sends) },
                attempts: state.payments.count { $0.orderId == draft.orderId })
            let claimed: PaymentRecord
            let decision = try PaymentClaimPolicy.decide(claim, snapshot)
            switch decision.attempt {
            case .first(let record):
                claimed = record
                state.payments.append(record)
            case .resend:
                guard let index = unknown else { preconditionFailure("the policy re-sends only an unknown attempt") }
                state.payments[index].state = decision.move.to
                state.payments[index].sends += 1
                state.payments[index].updatedAt = draft.createdAt
                state.payments[index].lastSentAt = draft.createdAt
                claimed = state.payments[index]
            }
            state.orders[draft.orderId]?.state = decision.move.order.to
            state.transactions.insert(claim.transactionId)
            state.payloads[claimed.id] = claim.sealedRequest
            return claimed
        }
    }

    public func transition(_ change: PaymentTransition) async throws -> PaymentRecord? {
        try state.withLock { state in
            guard let index = state.payments.firstIndex(where: { $0.id == change.paymentId }),
                state.payments[index].orderId == change.orderId, state.payments[index].state == change.move.from,
                state.orders[change.orderId]?.state == change.move.order.from,
                change.expectedSends.map({ $0 == state.payments[index].sends }) ?? true
            else { return nil }
            let payment = change.applied(to: state.payments[index])
            state.operations[payment.id] = nil
            if PaymentLifecycle.isResolved(change.move.to) { state.payloads[payment.id] = nil }
            state.payments[index] = payment
            state.orders[change.orderId]?.state = change.move.order.to
            if let type = PaymentLifecycle.reportedEvent(change.move, moved: payment) {
                try Self.appendPaymentEvent(type, payment: payment, to: &state, at: change.at)
            }
            if let release = change.release {
                state.refunds.append(release)
                try Self.appendPaymentEvent(.paymentRefunded, payment: payment, refund: release, to: &state, at: change.at)
            }
            // The order's owner as this move finds it, which a retirement may have changed.
            if let mandate = change.mandate(ownedBy: state.orders[change.orderId]?.merchantIdentifier ?? "") {
                state.mandates.append(mandate)
                state.events.append(try WebhookEvent.make(.mandateCreated, mandate: mandate, payment: payment, at: mandate.createdAt))
            }
            return payment
        }
    }

    public func retryPayload(paymentId: String) async throws -> [UInt8]? {
        state.withLock { $0.payloads[paymentId] }
    }

    public func leasePaymentsForReconciliation(at date: Date, until leaseEnd: Date, limit: Int) async throws -> [PaymentRecord] {
        state.withLock { state in
            let due = state.payments.indices.filter {
                state.payments[$0].state == .unknown && (state.payments[$0].nextReconcileAt.map { $0 <= date } ?? false)
            }
            let leased = due.sorted {
                (state.payments[$0].nextReconcileAt ?? .distantFuture, $0) < (state.payments[$1].nextReconcileAt ?? .distantFuture, $1)
            }.prefix(limit)
            for index in leased { state.payments[index].nextReconcileAt = leaseEnd }
            return leased.map { state.payments[$0] }
        }
    }

    public func stalePendingPayments(before date: Date) async throws -> [PaymentRecord] {
        state.withLock { $0.payments.filter { $0.state == .pending && $0.updatedAt < date } }
    }

    public func deferReconciliation(paymentId: String, until date: Date?) async throws -> Bool {
        state.withLock { state in
            guard let index = state.payments.firstIndex(where: { $0.id == paymentId && $0.state == .unknown }) else { return false }
            state.payments[index].nextReconcileAt = date
            return true
        }
    }

    public func payments(orderId: String) async throws -> [PaymentRecord] {
        state.withLock { $0.payments.filter { $0.orderId == orderId } }
    }

    public func payment(id: String) async throws -> PaymentRecord? {
        state.withLock { $0.payments.first { $0.id == id } }
    }

    public func payments(state wanted: PaymentState?, limit: Int) async throws -> [PaymentRecord] {
        state.withLock { state in
            Array(state.payments.reversed().filter { wanted == nil || $0.state == wanted }.prefix(limit))
        }
    }

    public func registeredMerchants() async throws -> [RegisteredMerchant] {
        state.withLock { $0.merchants.values.sorted { $0.partnerIdentifier < $1.partnerIdentifier } }
    }

    public func saveRegistration(_ merchant: RegisteredMerchant) async throws {
        try state.withLock { state in
            let id = merchant.partnerIdentifier
            if let variant = state.merchants.keys.first(where: { $0 != id && $0.lowercased() == id.lowercased() }) {
                throw RegisteredMerchant.caseVariant(id, of: variant)
            }
            for domain in merchant.domains {
                if state.merchants.values.contains(where: {
                    $0.partnerIdentifier != merchant.partnerIdentifier && $0.domains.contains(domain)
                }) {
                    throw RegisteredMerchant.domainTaken(domain)
                }
            }
            var saved = merchant
            if let existing = state.merchants[merchant.partnerIdentifier] { saved.createdAt = existing.createdAt }
            state.merchants[merchant.partnerIdentifier] = saved
        }
    }

    @discardableResult
    public func deleteRegistration(partnerIdentifier: String, at date: Date) async throws -> String {
        let retired = RetiredTenant.recordKey(for: partnerIdentifier)
        state.withLock { state in
            state.merchants[partnerIdentifier] = nil
            state.claims[partnerIdentifier] = nil
            state.settings[partnerIdentifier] = nil
            for index in state.apiKeys.indices
            where state.apiKeys[index].merchantIdentifier == partnerIdentifier && state.apiKeys[index].revokedAt == nil {
                state.apiKeys[index].revokedAt = date
            }
            for index in state.events.indices
            where state.events[index].merchantIdentifier == partnerIdentifier && state.events[index].state == .pending {
                state.events[index].state = .skipped
                state.events[index].nextAttemptAt = nil
                state.events[index].lastError = RetiredTenant.skippedEventError
            }
            for (id, order) in state.orders where order.merchantIdentifier == partnerIdentifier {
                state.orders[id]?.merchantIdentifier = retired
            }
            for (id, request) in state.requests where request.merchantIdentifier == partnerIdentifier {
                state.requests[id]?.merchantIdentifier = retired
            }
            for index in state.mandates.indices where state.mandates[index].merchantIdentifier == partnerIdentifier {
                state.mandates[index].merchantIdentifier = retired
            }
            for index in state.apiKeys.indices where state.apiKeys[index].merchantIdentifier == partnerIdentifier {
                state.apiKeys[index].merchantIdentifier = retired
            }
            for index in state.events.indices where state.events[index].merchantIdentifier == partnerIdentifier {
                state.events[index].merchantIdentifier = retired
            }
            for index in state.tokenEvents.indices where state.tokenEvents[index].merchantIdentifier == partnerIdentifier {
                state.tokenEvents[index].merchantIdentifier = retired
            }
        }
        return retired
    }
}

extension InMemoryStore {
    public func claimOperation(paymentId: String, in wanted: PaymentState, at date: Date, until leaseEnd: Date) async throws -> Bool {
        state.withLock { state in
            guard state.payments.contains(where: { $0.id == paymentId && $0.state == wanted }),
                state.operations[paymentId].map({ $0 <= date }) ?? true
            else { return false }
            state.operations[paymentId] = leaseEnd
            return true
        }
    }

    public func releaseOperation(paymentId: String) async throws {
        state.withLock { _ = $0.operations.removeValue(forKey: paymentId) }
    }
}
