import ApplePay
import Foundation
import Logging

/// The merchant, configured or registered, an identifier names, as this instance knows it now.
public protocol MerchantLookup: Sendable {
    func merchant(identifier: String) -> MerchantConfiguration?
}

/// Ends and updates mandates, for the shop (`DELETE /v1/mandates/{id}`) and for Apple's
/// merchant token events. The store's compare-and-set decides; the calls to the processor and
/// to Apple follow it and never undo it.
public struct MandateLifecycle: Sendable {
    let store: any MandateRecords
    let processors: PaymentProcessors
    /// Apple's Merchant Token Management API; nil: events cannot be fetched nor tokens unlinked.
    let tokens: (any MerchantTokenService)?
    let directory: any MerchantLookup
    /// Checks token events' encrypted metadata: the payments' token root, under
    /// ``TokenVerifier/Policy/tokenMetadata``.
    let metadataVerifier: TokenVerifier
    let time: TimeSource
    public let logger: Logger
    /// Told when Apple gives a token a new key, so its usage information is sealed to it again.
    public var usage: MerchantTokenUsageService?

    /// - Parameter tokenVerifier: the payments' token verifier (Apple's root, or the demo's test
    ///   root), whose root and verified chains check token events' encrypted metadata.
    public init(
        store: any MandateRecords, processors: PaymentProcessors, tokens: (any MerchantTokenService)?, directory: any MerchantLookup,
        time: TimeSource, logger: Logger, tokenVerifier: TokenVerifier = TokenVerifier()
    ) {
        self.store = store
        self.processors = processors
        self.tokens = tokens
        self.directory = directory
        self.metadataVerifier = tokenVerifier.withPolicy(.tokenMetadata)
        self.time = time
        self.logger = logger
    }

    /// What fetching one notified event came to.
    public enum EventFetch: Sendable, Equatable {
        /// Apple described the event, and it was applied to the token's mandates (if any).
        case applied
        /// Apple does not know the event: nothing changed.
        case unknownEvent
        /// Apple could not be asked now, or the change could not be recorded: try again later.
        case unavailable(String)
        /// No merchant Orchard can ask Apple for under this identifier (any more): nothing changed.
        case noMerchant
        /// Orchard cannot ask Apple for this event at all (the request cannot be built).
        case refused(String)
    }

    /// Ends an active mandate; then deletes the credential at its processor and, when the shop
    /// ended it, unlinks the merchant token at Apple. Nil when it was not active.
    /// - Parameter processor: the processor to delete the credential at; nil: its merchant's now.
    ///   A retirement names its tenant's, which the mandate's owner (its record key) does not find.
    public func end(
        _ mandate: MandateRecord, reason: String, unlinkAtApple: Bool, through processor: (any PaymentProcessor)? = nil
    ) async throws -> MandateRecord? {
        let processor = processor ?? processors.processor(forMerchant: mandate.merchantIdentifier)
        guard let ended = try await Self.end(mandate, reason: reason, in: store, through: processor, at: time.now, logger: logger)
        else { return nil }
        if unlinkAtApple, let token = mandate.merchantTokenIdentifier {
            await unlink(token, mandate: mandate)
        }
        if let token = mandate.merchantTokenIdentifier {
            // Its usage information is retired once no active mandate is left on the token.
            await usage?.markDue(merchantIdentifier: mandate.merchantIdentifier, merchantTokenIdentifier: token)
        }
        return ended
    }

    /// Ends an active mandate by compare-and-set, then deletes its stored credential at
    /// `processor` when that is the one that stored it: only the caller whose compare-and-set won
    /// deletes, so two that meet the same mandate (a retirement and the payment move that created
    /// it) call the processor once. Nil, calling nothing, when it was not active.
    static func end(
        _ mandate: MandateRecord, reason: String, in store: any MandateRecords, through processor: any PaymentProcessor, at date: Date,
        logger: Logger
    ) async throws -> MandateRecord? {
        guard let ended = try await store.endMandate(id: mandate.id, reason: reason, at: date) else { return nil }
        logger.notice("mandate ended", metadata: ["mandate": "\(mandate.id)", "reason": "\(reason)"])
        if processor.name == mandate.processor {
            do {
                try await processor.deleteCredential(mandate)
            } catch {
                logger.warning(
                    "the processor did not delete the mandate's stored credential: delete it there",
                    metadata: ["mandate": "\(mandate.id)", "processor": "\(mandate.processor)", "error": "\(error)"])
            }
        } else {
            logger.warning(
                "the mandate's stored credential was not deleted: its merchant no longer uses \(mandate.processor); delete it there",
                metadata: ["mandate": "\(mandate.id)", "processor": "\(mandate.processor)"])
        }
        return ended
    }

    /// Ends `mandate` unless it has ended, and answers it as it now stands: ended by this call,
    /// or as the store has it when it had ended already (here or by a concurrent call, whose
    /// reason the answer then shows).
    public func endUnlessEnded(_ mandate: MandateRecord, reason: String) async throws -> MandateRecord {
        guard mandate.state == .active, let ended = try await end(mandate, reason: reason, unlinkAtApple: true) else {
            return try await store.mandate(id: mandate.id) ?? mandate
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

    /// Fetches the event Apple notified for a merchant, over mutual TLS, and ends (UNLINK) or
    /// updates (card details, card art, keys) the token's mandates.
    public func fetchAndApply(eventId: String, merchantIdentifier: String) async -> EventFetch {
        let metadata: Logger.Metadata = ["merchant": "\(merchantIdentifier)", "event": "\(eventId)"]
        guard let merchant = directory.merchant(identifier: merchantIdentifier), let tokens else { return .noMerchant }
        let event: MerchantTokenEvent
        do {
            event = try await tokens.event(id: eventId, for: merchant)
        } catch {
            switch (error.kind, error.appleStatus) {
            case (.rejected, 400), (.rejected, 404):
                // Apple's definite answer about the event itself.
                logger.notice("Apple does not know this merchant token event: nothing changed", metadata: metadata)
                return .unknownEvent
            case (.invalidRequest, _):
                return .refused(error.message)
            default:
                // Unreachable, slow, busy, 5xx, or a refusal of Orchard's identity (401, 403, 417):
                // nothing said about the event, so it is asked again.
                return .unavailable("\(error.message) (\(error.hint))")
            }
        }
        do {
            try await apply(event, merchant: merchant, metadata: metadata)
            return .applied
        } catch {
            return .unavailable("the event's change could not be recorded: \(error)")
        }
    }

    /// Applies a fetched event to the token's active mandates. For the rule on an update's
    /// encrypted metadata, see ``openedMetadata(_:merchant:metadata:)``.
    func apply(_ event: MerchantTokenEvent, merchant: MerchantConfiguration, metadata: Logger.Metadata) async throws {
        let mandates = try await store.mandates(
            merchantIdentifier: merchant.merchantIdentifier, merchantTokenIdentifier: event.merchantTokenIdentifier
        ).filter { $0.state == .active }
        var metadata = metadata
        metadata["eventType"] = "\(event.eventType)"
        if mandates.isEmpty {
            logger.notice("a merchant token event for no active mandate: nothing changed", metadata: metadata)
            return
        }
        switch event.eventType {
        case MerchantTokenEvent.unlink:
            for mandate in mandates {
                _ = try await end(mandate, reason: "apple:" + (event.reason ?? "unlink").prefix(64), unlinkAtApple: false)
            }
        case MerchantTokenEvent.updatedMetadata, MerchantTokenEvent.updatedCardArt, MerchantTokenEvent.updatedPublicKey:
            if event.eventType == MerchantTokenEvent.updatedPublicKey {
                // Apple's answer to a 202: the device made the token's key, so the usage information can be
                // announced, whatever the event's card details come to (Apple is asked for the key itself).
                await usage?.markDue(
                    merchantIdentifier: merchant.merchantIdentifier, merchantTokenIdentifier: event.merchantTokenIdentifier)
            }
            // Opened once for the event, so a refusal is logged once whatever the mandates.
            guard case .usable(let opened) = openedMetadata(event, merchant: merchant, metadata: metadata) else { return }
            for mandate in mandates {
                try await update(mandate, from: event, opened: opened, metadata: metadata.merging(["mandate": "\(mandate.id)"]) { $1 })
            }
        default:
            logger.warning("a merchant token event of a type Orchard does not know: nothing changed", metadata: metadata)
        }
    }
}
