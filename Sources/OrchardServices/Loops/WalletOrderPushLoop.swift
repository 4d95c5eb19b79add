import Foundation
import Logging
import OrchardCore
import ServiceLifecycle

/// Sends the Wallet order pushes the outbox owes, every `interval`: each pass leases the due ones
/// (see ``WalletOrderPushSender``), so several instances share the outbox without sending one twice.
public struct WalletOrderPushLoop: Service {
    let sender: WalletOrderPushSender
    let interval: Duration
    let logger: Logger

    public init(sender: WalletOrderPushSender, interval: Duration = .seconds(1), logger: Logger) {
        self.sender = sender
        self.interval = interval
        self.logger = logger
    }

    public func run() async throws {
        await repeatUntilShutdown(every: interval) { await sendDue() }
    }

    /// One pass, then more while a pass leased a full batch: how many were leased in all.
    @discardableResult
    public func sendDue() async -> Int {
        var total = 0
        do {
            while true {
                let leased = try await sender.sendDue(limit: 64)
                total += leased
                if leased < 64 || Task.isCancelled { break }
            }
        } catch {
            logger.error("wallet order pushes could not be leased", metadata: ["error": "\(error)"])
        }
        return total
    }
}
