import Foundation

/// One of Apple's merchant token notifications, kept until the event it names has been fetched
/// from Apple and applied: the mirror of the webhook outbox. The notification itself carries
/// nothing but the event ID, so recording it costs Apple nothing and changes no mandate.
public struct TokenEventItem: Sendable, Codable, Equatable {
    public enum State: String, Sendable, Codable, CaseIterable {
        /// Waiting for its first or next fetch.
        case pending
        /// Apple confirmed the event, and it was applied to the token's mandates.
        case applied
        /// Apple does not know the event: nothing changed (a made-up ID, or one of another merchant's).
        case unknown
        /// Apple could not be asked within the retry window, or the merchant is gone: logged for an operator.
        case failed
    }

    /// `tev_` and 32 hex digits.
    public var id: String
    public var merchantIdentifier: String
    /// Apple's event ID, as ``MerchantTokenEvent/isValidIdentifier(_:)`` accepts it.
    public var eventId: String
    /// Who sent the notification: the client address's rate-limit key (an IPv4 address or an IPv6 /64).
    public var source: String
    public var state: State
    /// Fetches that got no definite answer from Apple so far.
    public var attempts: Int
    public var createdAt: Date
    /// When the next fetch is due (pending only).
    public var nextAttemptAt: Date?
    public var finishedAt: Date?
    public var lastError: String?

    public init(
        id: String, merchantIdentifier: String, eventId: String, source: String, state: State = .pending, attempts: Int = 0,
        createdAt: Date, nextAttemptAt: Date?, finishedAt: Date? = nil, lastError: String? = nil
    ) {
        self.id = id
        self.merchantIdentifier = merchantIdentifier
        self.eventId = eventId
        self.source = source
        self.state = state
        self.attempts = attempts
        self.createdAt = createdAt
        self.nextAttemptAt = nextAttemptAt
        self.finishedAt = finishedAt
        self.lastError = lastError
    }

    /// A new notification, due at once.
    public static func received(merchantIdentifier: String, eventId: String, source: String, at date: Date) -> TokenEventItem {
        TokenEventItem(
            id: "tev_" + RecordIdentifier.random(), merchantIdentifier: merchantIdentifier, eventId: eventId, source: source,
            createdAt: date, nextAttemptAt: date)
    }
}

/// What ``TokenEventInbox/recordTokenEvent(_:maxPendingFromSource:)`` did.
public enum TokenEventRecording: Sendable, Equatable {
    /// A new item.
    case recorded
    /// The merchant's event was already in the inbox (whatever its state): nothing recorded.
    case duplicate
    /// The source already has as many pending items as allowed: nothing recorded.
    case sourceFull
}

/// What the inbox remembers of a source's notifications: when Apple last confirmed an event it
/// sent, and when Apple last said it did not know one. ``TokenEventPolicy`` decides from it.
public struct TokenEventSourceStanding: Sendable, Equatable {
    public var lastConfirmed: Date?
    public var lastRefuted: Date?

    public init(lastConfirmed: Date? = nil, lastRefuted: Date? = nil) {
        self.lastConfirmed = lastConfirmed
        self.lastRefuted = lastRefuted
    }

    /// A source the inbox has no finished item of.
    public static let unknown = TokenEventSourceStanding()
}

/// One fetch's outcome (or a postponement), for ``TokenEventInbox/recordTokenEventAttempt(_:)``.
public struct TokenEventAttempt: Sendable, Equatable {
    public var itemId: String
    /// The item's attempts when it was leased: the write is a compare-and-set on (pending, attempts).
    public var attempts: Int
    public var state: TokenEventItem.State
    /// False when the fetch was postponed (no budget left) rather than tried.
    public var counted: Bool
    public var error: String?
    public var at: Date
    /// When a still-pending item is due again.
    public var nextAttemptAt: Date?

    public init(
        itemId: String, attempts: Int, state: TokenEventItem.State, counted: Bool = true, error: String? = nil, at: Date,
        nextAttemptAt: Date? = nil
    ) {
        self.itemId = itemId
        self.attempts = attempts
        self.state = state
        self.counted = counted
        self.error = error
        self.at = at
        self.nextAttemptAt = nextAttemptAt
    }
}

/// The token-event inbox as stored. Adapters only insert if absent, lease and compare-and-set;
/// ``TokenEventPolicy`` makes every decision (budgets, trust, caps, retries).
public protocol TokenEventInbox: Sendable {
    /// In one transaction: ``TokenEventRecording/duplicate`` when the inbox already holds the
    /// item's (merchant, event ID), whatever its state; ``TokenEventRecording/sourceFull`` when
    /// its source already has `maxPendingFromSource` pending items; otherwise inserts it.
    func recordTokenEvent(_ item: TokenEventItem, maxPendingFromSource: Int) async throws -> TokenEventRecording
    /// Leases pending items due at `date`, at most `perSource` of each source (its oldest due
    /// first), oldest due first across sources, at most `limit`: in one transaction their next
    /// attempt moves to `leaseEnd` (the items come back so), so no other caller gets them before
    /// then. One the holder leaves is due again at `leaseEnd`.
    func leaseTokenEvents(at date: Date, until leaseEnd: Date, perSource: Int, limit: Int) async throws -> [TokenEventItem]
    /// Records a fetch (or a postponement when `counted` is false) if the item is still pending
    /// with `attempts` attempts; false, changing nothing, otherwise. A finished state sets `finishedAt`.
    func recordTokenEventAttempt(_ attempt: TokenEventAttempt) async throws -> Bool
    /// Each source's standing, from its applied and unknown items; a source without any is absent.
    func tokenEventStandings(sources: [String]) async throws -> [String: TokenEventSourceStanding]
    func tokenEvent(merchantIdentifier: String, eventId: String) async throws -> TokenEventItem?
}
