import Foundation

/// What ``RecordPurging/purge(before:limit:)`` may delete: rows older than each date; nil keeps that kind.
public struct PurgeCutoffs: Sendable, Equatable {
    /// Expired orders that never had a payment, whose expiry is before this.
    public var expiredOrders: Date?
    /// Delivered webhook events delivered before this.
    public var deliveredWebhooks: Date?
    /// Failed and skipped webhook events created before this.
    public var failedWebhooks: Date?
    /// Token-event inbox items finished (applied, unknown or failed) before this.
    public var finishedTokenEvents: Date?

    public init(
        expiredOrders: Date? = nil, deliveredWebhooks: Date? = nil, failedWebhooks: Date? = nil, finishedTokenEvents: Date? = nil
    ) {
        self.expiredOrders = expiredOrders
        self.deliveredWebhooks = deliveredWebhooks
        self.failedWebhooks = failedWebhooks
        self.finishedTokenEvents = finishedTokenEvents
    }
}

/// How many rows one purge deleted.
public struct PurgeCounts: Sendable, Equatable {
    /// Orders deleted (each with its payment request, when it had one).
    public var orders: Int
    /// Webhook events deleted, delivered and failed together.
    public var webhookEvents: Int
    /// Finished token-event inbox items deleted.
    public var tokenEvents: Int

    public init(orders: Int = 0, webhookEvents: Int = 0, tokenEvents: Int = 0) {
        self.orders = orders
        self.webhookEvents = webhookEvents
        self.tokenEvents = tokenEvents
    }
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
