import ApplePay
import Foundation
import Logging
import OrchardCore
import ServiceLifecycle

/// Moves open payment requests past their expiry to `expired` (with their webhook), every `interval`.
public struct PaymentRequestExpiry: Service {
    let store: any PaymentRequests
    let interval: Duration
    let time: TimeSource
    let logger: Logger

    public init(store: any PaymentRequests, interval: Duration, time: TimeSource, logger: Logger) {
        self.store = store
        self.interval = interval
        self.time = time
        self.logger = logger
    }

    public func run() async throws {
        await repeatUntilShutdown(every: interval) { await expireDue() }
    }

    /// One pass: closes up to 500 open payment requests whose expiry has passed; returns their IDs.
    @discardableResult
    public func expireDue() async -> [String] {
        do {
            let expired = try await store.expireOrders(at: time.now, limit: 500)
            if !expired.isEmpty { logger.info("payment requests expired", metadata: ["count": "\(expired.count)"]) }
            return expired
        } catch {
            logger.error("expired payment requests could not be closed", metadata: ["error": "\(error)"])
            return []
        }
    }
}
