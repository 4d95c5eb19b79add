import Foundation
import Logging
import OrchardCore
import ServiceLifecycle

/// Announces merchant tokens' usage information to Apple every `interval`: each pass finds new
/// mandates' tokens and leases the due announcements (see ``MerchantTokenUsageService``), so
/// several instances share them without announcing one twice at once.
public struct MerchantTokenUsageLoop: Service {
    let service: MerchantTokenUsageService
    let interval: Duration
    let logger: Logger

    public init(service: MerchantTokenUsageService, interval: Duration = .seconds(1), logger: Logger) {
        self.service = service
        self.interval = interval
        self.logger = logger
    }

    public func run() async throws {
        await repeatUntilShutdown(every: interval) { await announceDue() }
    }

    /// One pass, then more while a pass leased a full batch: how many were leased in all.
    @discardableResult
    public func announceDue() async -> Int {
        var total = 0
        do {
            while true {
                let leased = try await service.announceDue(limit: 32)
                total += leased
                if leased < 32 || Task.isCancelled { break }
            }
        } catch {
            logger.error("merchant token usage announcements could not be leased", metadata: ["error": "\(error)"])
        }
        return total
    }
}
