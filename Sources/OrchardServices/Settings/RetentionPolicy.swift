import Foundation
import OrchardCore

/// How long finished rows are kept; nil: forever.
public struct RetentionPolicy: Sendable, Equatable {
    /// After expiry, for orders that never had a payment.
    public var expiredOrders: Duration? = .seconds(30 * 86_400)
    /// After delivery.
    public var deliveredWebhooks: Duration? = .seconds(30 * 86_400)
    /// After creation, for failed and skipped events.
    public var failedWebhooks: Duration? = .seconds(90 * 86_400)
    /// After they finished, for token-event inbox items. While kept, a repeated notification is
    /// not fetched again, and a source's standing (``TokenEventPolicy/isTrusted(_:)``) is read from them.
    public var finishedTokenEvents: Duration? = .seconds(30 * 86_400)
    /// How often the purge runs.
    public var interval: Duration = .seconds(3600)

    public init() {}

    /// The store's cutoffs at `now`.
    public func cutoffs(at now: Date) -> PurgeCutoffs {
        func before(_ age: Duration?) -> Date? { age.map { now.addingTimeInterval(-TimeInterval($0.components.seconds)) } }
        return PurgeCutoffs(
            expiredOrders: before(expiredOrders), deliveredWebhooks: before(deliveredWebhooks), failedWebhooks: before(failedWebhooks),
            finishedTokenEvents: before(finishedTokenEvents))
    }
}
