import Foundation

// What the payments API keeps beside orders and payments, one repository each: API keys,
// payment requests, refunds, the webhook outbox and the purge of what nothing needs any more.
// Every change is one transaction; every state move a compare-and-set.

/// Merchants' secret API keys, as their hashes: looked up by ID on every payments-API call.
public protocol APIKeys: Sendable {
    /// Adds a key; fails with ``CoreError/Code/limitReached`` when the merchant already holds
    /// ``APIKeyRecord/maximumActive`` active keys.
    func insertAPIKey(_ key: APIKeyRecord) async throws
    func apiKey(id: String) async throws -> APIKeyRecord?
    /// Every key (revoked ones too), of one merchant or of all (merchant by merchant), oldest first.
    func apiKeys(merchantIdentifier: String?) async throws -> [APIKeyRecord]
    /// False when there is no such active key.
    func revokeAPIKey(id: String, at date: Date) async throws -> Bool
}

/// Payment requests (a shop's cart, priced by Orchard, and its idempotency fingerprint) and
/// the expiry of open orders. A payment request and its open order are created in one
/// transaction, so creating one is this repository's unit of work although it inserts an
/// order of ``OrderPayments``; expiring orders writes their `payment_request.expired` events.
public protocol PaymentRequests: Sendable {
    /// Inserts the request and its open order in one transaction, unless the merchant already
    /// used its idempotency key: then the earlier request comes back (`created` false) when the
    /// fingerprints match, and ``CoreError/Code/idempotencyMismatch`` otherwise.
    func createPaymentRequest(_ request: PaymentRequestRecord, order: OrderRecord) async throws -> (
        record: PaymentRequestRecord, created: Bool
    )
    func paymentRequest(id: String) async throws -> PaymentRequestRecord?
    /// Moves open orders whose expiry has passed to `expired`, each payment request's with its
    /// `payment_request.expired` event (a checkout-page order, which has no payment request,
    /// expires without one); returns their IDs.
    func expireOrders(at date: Date, limit: Int) async throws -> [String]
}

/// The retention purge: deletes, across aggregates, only rows no aggregate needs any more.
public protocol RecordPurging: Sendable {
    /// Deletes rows nothing needs any more, at most `limit` of each kind per call (the caller
    /// repeats while a count reaches `limit`):
    /// - orders in state `expired` whose `expiresAt` is before `cutoffs.expiredOrders` and that
    ///   have no payment row at all, each with its payment request;
    /// - webhook events `delivered` before `cutoffs.deliveredWebhooks`;
    /// - webhook events `failed` or `skipped` and created before `cutoffs.failedWebhooks`;
    /// - token-event inbox items finished before `cutoffs.finishedTokenEvents` (never pending ones).
    ///
    /// A nil cutoff deletes none of that kind. Payments, refunds, API keys and any order with a
    /// payment are never deleted. Each kind is deleted in one transaction.
    func purge(before cutoffs: PurgeCutoffs, limit: Int) async throws -> PurgeCounts
}

/// Refunds of a payment: the payment is the unit of work. A claim locks it and compares its
/// settled amount with its refunds; an outcome is a compare-and-set on the refund's state,
/// with its `payment.refunded` event. Also the background leases on refunds to reconcile.
public protocol Refunds: Sendable {
    /// In one transaction: the payment must be settled and the refund must fit in what pending,
    /// refunded and unknown refunds leave. A refund with the same idempotency key comes back as
    /// it is, or, when unknown, back to pending with one more send (its reference unchanged).
    /// Fails with ``CoreError/Code/invalidState``, ``CoreError/Code/refundTooLarge``,
    /// ``CoreError/Code/idempotencyMismatch`` or ``CoreError/Code/paymentInProgress``.
    func claimRefund(_ draft: RefundRecord) async throws -> RefundRecord
    /// Moves a refund that is in state `from` (pending: its send's answer; unknown: what the
    /// processor's records hold) to its outcome, with `payment.refunded` when refunded; nil when
    /// it was not in state `from`.
    func finishRefund(id: String, from: RefundState, state: RefundState, outcome: RefundOutcome?, at date: Date) async throws
        -> RefundRecord?
    /// Keeps an unknown refund from the reconciler until `date` (the processor is asked again
    /// then); false when it is not unknown.
    func deferRefund(id: String, until date: Date) async throws -> Bool
    func refunds(paymentId: String) async throws -> [RefundRecord]
    /// Leases unknown refunds re-sent fewer than `maximumSends` times, and pending ones untouched
    /// since before `pendingBefore` (no call in flight), least recently changed first, leaving
    /// out those another caller leased until after `date`: in one transaction they are leased
    /// until `leaseEnd`. A lease only keeps other reconcilers off; the shop's own retry with the
    /// refund's Idempotency-Key is not held back by it.
    func leaseRefundsToReconcile(at date: Date, until leaseEnd: Date, pendingBefore: Date, maximumSends: Int, limit: Int)
        async throws -> [RefundRecord]
}

/// The webhook outbox: events written in the transaction of the change they report, leased
/// fairly per merchant for delivery, each attempt recorded as a compare-and-set.
public protocol WebhookOutbox: Sendable {
    /// Leases pending events whose next attempt is due at `date`, oldest due first: in one
    /// transaction their next attempt moves to `leaseEnd` (the events come back so), so no other
    /// caller gets them before then. The holder attempts each before `leaseEnd` and records it
    /// with ``recordDelivery(_:)``; one it leaves is due again at `leaseEnd`.
    /// Which events: `lease` says how many merchants, how many of each one's and which merchants
    /// not (see ``WebhookLease``); the oldest due first, each merchant's in order.
    func leaseWebhookEvents(at date: Date, until leaseEnd: Date, fairly lease: WebhookLease) async throws -> [WebhookEvent]
    /// Records an attempt if the event is still pending at `attempt` attempts; false otherwise.
    func recordDelivery(_ result: WebhookDeliveryResult) async throws -> Bool
    /// Newest first (by creation, then by writing).
    func webhookEvents(merchantIdentifier: String?, state: WebhookEvent.DeliveryState?, limit: Int) async throws -> [WebhookEvent]
    func webhookEvent(id: String) async throws -> WebhookEvent?
    /// Makes an event pending and due now, whatever became of it; false when there is none.
    func replayWebhookEvent(id: String, at date: Date) async throws -> Bool
}

/// How a webhook lease shares the outbox between merchants: each merchant gets at most
/// `perMerchant` of its due events and at most `merchants` merchants are served at once, those
/// whose oldest due event is oldest first, so one merchant's backlog (or its hanging endpoint)
/// never takes the turn of another's.
public struct WebhookLease: Sendable, Equatable {
    /// How many merchants' events one lease takes, at most.
    public var merchants: Int
    /// How many of one merchant's due events, at most.
    public var perMerchant: Int
    /// How many events in all, at most.
    public var total: Int
    /// Merchants whose events this caller is still sending: left out, their events stay due.
    public var excluding: Set<String>

    public init(merchants: Int, perMerchant: Int, total: Int? = nil, excluding: Set<String> = []) {
        self.merchants = max(1, merchants)
        self.perMerchant = max(1, perMerchant)
        self.total = max(1, total ?? merchants * perMerchant)
        self.excluding = excluding
    }

    /// The `limit` oldest due events, whatever their merchants (for tools and tests).
    public static func oldest(_ limit: Int) -> WebhookLease {
        WebhookLease(merchants: limit, perMerchant: limit, total: limit)
    }
}

extension WebhookOutbox {
    /// The `limit` oldest due events, whatever their merchants.
    public func leaseWebhookEvents(at date: Date, until leaseEnd: Date, limit: Int) async throws -> [WebhookEvent] {
        try await leaseWebhookEvents(at: date, until: leaseEnd, fairly: .oldest(limit))
    }
}

extension Refunds {
    /// Moves a pending refund to its send's outcome.
    public func finishRefund(id: String, state: RefundState, outcome: RefundOutcome?, at date: Date) async throws -> RefundRecord? {
        try await finishRefund(id: id, from: .pending, state: state, outcome: outcome, at: date)
    }
}
