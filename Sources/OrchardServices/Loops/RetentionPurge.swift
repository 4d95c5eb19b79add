import ApplePay
import Foundation
import Logging
import OrchardCore
import ServiceLifecycle

/// Deletes what `retention` says has served its purpose: expired orders that never had a
/// payment, finished webhook events and finished token-event inbox items. Payments and refunds
/// are never deleted.
public struct RetentionPurge: Service {
    let store: any RecordPurging
    let policy: RetentionPolicy
    let time: TimeSource
    let logger: Logger
    /// Rows of each kind per transaction: small enough not to hold the database long.
    static let batch = 500

    public init(store: any RecordPurging, policy: RetentionPolicy, time: TimeSource, logger: Logger) {
        self.store = store
        self.policy = policy
        self.time = time
        self.logger = logger
    }

    public func run() async throws {
        await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                await purgeOnce()
                try? await Task.sleep(for: policy.interval)
            }
        }
    }

    /// Purges in batches until a batch comes back short; returns what went.
    @discardableResult
    public func purgeOnce() async -> PurgeCounts {
        let cutoffs = policy.cutoffs(at: time.now)
        guard cutoffs != PurgeCutoffs() else { return PurgeCounts() }
        var total = PurgeCounts()
        do {
            while !Task.isCancelled {
                let counts = try await store.purge(before: cutoffs, limit: Self.batch)
                total.orders += counts.orders
                total.webhookEvents += counts.webhookEvents
                total.tokenEvents += counts.tokenEvents
                if counts.orders < Self.batch && counts.webhookEvents < Self.batch && counts.tokenEvents < Self.batch { break }
            }
        } catch {
            logger.error("old rows could not be purged", metadata: ["error": "\(error)"])
        }
        if total != PurgeCounts() {
            logger.info(
                "purged old rows",
                metadata: [
                    "orders": "\(total.orders)", "webhookEvents": "\(total.webhookEvents)", "tokenEvents": "\(total.tokenEvents)",
                ])
        }
        return total
    }
}
