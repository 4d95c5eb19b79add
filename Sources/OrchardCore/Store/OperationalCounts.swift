import Foundation

/// What the metrics gauges show of the store, read every few seconds: one cheap count per table.
public struct OperationalCounts: Sendable, Equatable {
    /// Payments by state; a state without payments may be absent.
    public var payments: [PaymentState: Int]
    /// Webhook events waiting for their first or next attempt.
    public var pendingWebhooks: Int
    /// When the oldest of them was written; nil when none waits.
    public var oldestPendingWebhook: Date?
    /// Apple's token notifications whose event is still to be fetched, and when the oldest came.
    public var pendingTokenEvents: Int
    public var oldestPendingTokenEvent: Date?
    /// When the oldest payment still `unknown` was created; nil when none is. Past the
    /// reconciler's reach (its re-sends and their delays) such a payment is an operator's.
    public var oldestUnknownPayment: Date?

    public init(
        payments: [PaymentState: Int], pendingWebhooks: Int, oldestPendingWebhook: Date?, pendingTokenEvents: Int = 0,
        oldestPendingTokenEvent: Date? = nil, oldestUnknownPayment: Date? = nil
    ) {
        self.payments = payments
        self.pendingWebhooks = pendingWebhooks
        self.oldestPendingWebhook = oldestPendingWebhook
        self.pendingTokenEvents = pendingTokenEvents
        self.oldestPendingTokenEvent = oldestPendingTokenEvent
        self.oldestUnknownPayment = oldestUnknownPayment
    }
}

/// What the metrics gauges read: one cheap count per table, never a scan of every row.
public protocol OperationalCounting: Sendable {
    /// Payments by state, the oldest unknown one, and the webhook outbox's and token-event inbox's backlogs, for the
    /// metrics gauges; nil when the store cannot count cheaply, and the gauges are then left out.
    func operationalCounts() async throws -> OperationalCounts?
    /// Throws ``StoreError/Code/unavailable`` while the store cannot serve (its database cannot
    /// be reached, its disk is full, its file cannot be written); `/health` then answers not ready.
    func checkAvailable() async throws
    /// Told by the store's own calls whether it can be reached, between checks; nil when the
    /// store has no such signal (then only ``checkAvailable()`` decides).
    var availability: StoreAvailability? { get }
}

extension OperationalCounting {
    public var availability: StoreAvailability? { nil }
}
