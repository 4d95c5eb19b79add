import Foundation

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
    /// Records one attempt, `skipped` with `reason`, for every pending event of `merchants` due
    /// at `date` (merchants with no endpoint, so nothing was sent), in one statement; how many.
    /// Events leased meanwhile (not due) are left to their holder.
    func skipWebhookEvents(of merchants: Set<String>, at date: Date, reason: String) async throws -> Int
    /// Newest first (by creation, then by writing).
    func webhookEvents(merchantIdentifier: String?, state: WebhookEvent.DeliveryState?, limit: Int) async throws -> [WebhookEvent]
    func webhookEvent(id: String) async throws -> WebhookEvent?
    /// Makes an event pending and due now, whatever became of it; false when there is none.
    func replayWebhookEvent(id: String, at date: Date) async throws -> Bool
    /// One page of `merchant`'s event feed (`GET /v1/events`): at most `limit` of its events the
    /// outbox still holds, whatever their delivery, in the feed's order, starting after the
    /// event `after` (from the first when nil). Nil when `after` is not an event of `merchant`
    /// (another merchant's, purged, or none).
    ///
    /// The feed's order never changes behind a reader: once a page has been read, no event can
    /// appear before its last one, so a reader that keeps the last ID it read misses nothing. An
    /// order of creation time or of insertion would not do that: a transaction that inserted
    /// first may commit after one that inserted later and was already read. So each store
    /// returns only events whose order is settled: SQLite and memory write one transaction at a
    /// time (insertion order is commit order); PostgreSQL returns only events of transactions
    /// older than every transaction still open, ordered by transaction ID, then insertion.
    func webhookEventFeed(of merchant: String, after: String?, limit: Int) async throws -> [WebhookEvent]?
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
