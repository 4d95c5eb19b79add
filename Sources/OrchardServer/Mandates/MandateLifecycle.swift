import ApplePay
import Foundation
import Logging
import OrchardCore
import Synchronization

/// Ends and updates mandates, for the shop (`DELETE /v1/mandates/{id}`) and for Apple's
/// merchant token events. The store's compare-and-set decides; the calls to the processor and
/// to Apple follow it and never undo it.
struct MandateLifecycle: Sendable {
    let store: any OrchardStore
    let processors: PaymentProcessors
    /// Apple's Merchant Token Management API; nil: events cannot be fetched nor tokens unlinked.
    let tokens: (any MerchantTokenService)?
    let directory: MerchantDirectory
    let time: TimeSource
    let logger: Logger
    /// Event fetches per merchant and minute: the notification URL is unauthenticated, and each
    /// fetch is a call to Apple under the merchant's identity.
    let fetchBudget = FetchBudget(perMinute: 60)

    /// What the notification endpoint answers Apple.
    enum NotificationAnswer: Equatable {
        /// Handled, or nothing to handle (an unknown event or token).
        case ok
        /// Apple could not be asked for the event now: Apple retries a non-200 notification.
        case retryLater
    }

    /// Ends an active mandate; then deletes the credential at its processor and, when the shop
    /// ended it, unlinks the merchant token at Apple. Nil when it was not active.
    func end(_ mandate: MandateRecord, reason: String, unlinkAtApple: Bool) async throws -> MandateRecord? {
        guard let ended = try await store.endMandate(id: mandate.id, reason: reason, at: time.now) else { return nil }
        logger.notice("mandate ended", metadata: ["mandate": "\(mandate.id)", "reason": "\(reason)"])
        let processor = processors.processor(forMerchant: mandate.merchantIdentifier)
        if processor.name == mandate.processor {
            do {
                try await processor.deleteCredential(mandate)
            } catch {
                logger.warning(
                    "the processor did not delete the mandate's stored credential: delete it there",
                    metadata: ["mandate": "\(mandate.id)", "processor": "\(mandate.processor)", "error": "\(error)"])
            }
        }
        if unlinkAtApple, let token = mandate.merchantTokenIdentifier {
            await unlink(token, mandate: mandate)
        }
        return ended
    }

    private func unlink(_ token: String, mandate: MandateRecord) async {
        guard let tokens, let merchant = directory.merchant(identifier: mandate.merchantIdentifier) else {
            logger.warning(
                "the merchant token was not unlinked at Apple (no gateway for this merchant)", metadata: ["mandate": "\(mandate.id)"])
            return
        }
        do {
            try await tokens.unlink(merchantTokenIdentifier: token, for: merchant)
        } catch {
            logger.warning(
                "Apple did not unlink the merchant token; the mandate is ended in Orchard all the same",
                metadata: ["mandate": "\(mandate.id)", "error": "\(error.message)", "hint": "\(error.hint)"])
        }
    }

    /// Handles Apple's notification of `eventId` for a merchant: fetches the event over mutual
    /// TLS and ends (UNLINK) or updates (card details, card art, keys) the token's mandates.
    func handleNotification(eventId: String, merchantIdentifier: String) async -> NotificationAnswer {
        // Apple's IDs are short and plain; anything else is not Apple's, and is neither logged
        // as it came nor spends the merchant's fetches.
        guard MerchantTokenEvent.isValidIdentifier(eventId),
            (1...255).contains(merchantIdentifier.utf8.count), merchantIdentifier.utf8.allSatisfy({ (0x21...0x7E).contains($0) })
        else {
            logger.notice("a merchant token notification with an event ID Apple does not send: ignored")
            return .ok
        }
        let metadata: Logger.Metadata = ["merchant": "\(merchantIdentifier)", "event": "\(eventId)"]
        guard let merchant = directory.merchant(identifier: merchantIdentifier), let tokens else {
            logger.warning("a merchant token notification for no merchant Orchard can ask Apple for: ignored", metadata: metadata)
            return .ok
        }
        guard fetchBudget.take(merchantIdentifier, now: time.now) else {
            logger.warning("too many merchant token notifications this minute: Apple will retry", metadata: metadata)
            return .retryLater
        }
        let event: MerchantTokenEvent
        do {
            event = try await tokens.event(id: eventId, for: merchant)
        } catch {
            if error.kind == .invalidRequest || (error.kind == .rejected && (error.appleStatus ?? 500) < 500) {
                logger.notice("Apple does not know this merchant token event: nothing changed", metadata: metadata)
                return .ok
            }
            logger.error(
                "a merchant token event could not be fetched from Apple: Apple will notify again",
                metadata: metadata.merging(["error": "\(error.message)", "hint": "\(error.hint)"]) { $1 })
            return .retryLater
        }
        do {
            try await apply(event, merchantIdentifier: merchantIdentifier, metadata: metadata)
            return .ok
        } catch {
            logger.error("a merchant token event could not be recorded: Apple will notify again", metadata: metadata)
            return .retryLater
        }
    }

    private func apply(_ event: MerchantTokenEvent, merchantIdentifier: String, metadata: Logger.Metadata) async throws {
        let mandates = try await store.mandates(
            merchantIdentifier: merchantIdentifier, merchantTokenIdentifier: event.merchantTokenIdentifier
        ).filter { $0.state == .active }
        var metadata = metadata
        metadata["eventType"] = "\(event.eventType)"
        if mandates.isEmpty {
            logger.notice("a merchant token event for no active mandate: nothing changed", metadata: metadata)
        }
        for mandate in mandates {
            switch event.eventType {
            case MerchantTokenEvent.unlink:
                _ = try await end(mandate, reason: "apple:" + (event.reason ?? "unlink").prefix(64), unlinkAtApple: false)
            case MerchantTokenEvent.updatedMetadata, MerchantTokenEvent.updatedCardArt, MerchantTokenEvent.updatedPublicKey:
                _ = try await store.updateMandate(
                    id: mandate.id, metadata: event.merchantTokenMetadata ?? mandate.merchantTokenMetadata, at: time.now)
                logger.info("mandate updated from Apple's token event", metadata: metadata.merging(["mandate": "\(mandate.id)"]) { $1 })
            default:
                logger.warning("a merchant token event of a type Orchard does not know: nothing changed", metadata: metadata)
            }
        }
    }
}

/// A fixed number of calls per key and minute, in this process's memory.
final class FetchBudget: Sendable {
    let perMinute: Int
    private let used = Mutex<(minute: Int, counts: [String: Int])>((0, [:]))

    init(perMinute: Int) {
        self.perMinute = perMinute
    }

    func take(_ key: String, now: Date) -> Bool {
        let minute = Int(now.timeIntervalSince1970 / 60)
        return used.withLock { used in
            if used.minute != minute { used = (minute, [:]) }
            guard used.counts[key, default: 0] < perMinute else { return false }
            used.counts[key, default: 0] += 1
            return true
        }
    }
}
