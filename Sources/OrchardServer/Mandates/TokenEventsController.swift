import ApplePay
import Foundation
import Hummingbird
import Logging
import OrchardCore
import OrchardServices

/// `GET /apple-pay/token-events/{merchant}/notification/merchantToken/{eventId}`: Apple's
/// merchant token notifications. Apple appends `notification/merchantToken/{eventId}` to the
/// `tokenNotificationURL` the payment request named, and sends no body.
///
/// Anyone can call this URL, so it only records the (merchant, event ID) in the token-event
/// inbox and answers 200 at once; ``TokenEventFetcher`` fetches the event from Apple over mutual
/// TLS later, within budgets that made-up IDs cannot exhaust (``TokenEventPolicy``). A forged
/// notification thus changes nothing and costs Apple nothing, and a flood loses no genuine one.
struct TokenEventsController {
    let store: any TokenEventInbox
    let directory: MerchantDirectory
    let policy: TokenEventPolicy
    let limiter: RateLimiter
    /// False without Apple's Merchant Token Management API: nothing could ever be fetched.
    let fetching: Bool
    let time: TimeSource

    /// The routes the router adds.
    var routes: RouteCollection<OrchardRequestContext> {
        let router = RouteCollection(context: OrchardRequestContext.self)
        router.get("/apple-pay/token-events/{merchant}/notification/merchantToken/{eventId}") { _, context in
            try await receive(context)
        }
        return router
    }

    /// 200 once recorded (or for an event that is not Apple's to record: Apple requires 200 for
    /// an event it does not know); 429 for a source past its rate or its pending items; 500 only
    /// when the inbox cannot be written, so that Apple notifies again.
    func receive(_ context: OrchardRequestContext) async throws -> Response {
        // Per source first: whatever the rest, every notification counts against its sender.
        try limiter.check(.tokenEvents, context: context, merchant: nil)
        // The segment is percent-encoded as PaymentRequestView.tokenNotificationPath wrote it: partner IDs may hold `|`, `&`, `$`…
        let raw = try context.parameters.require("merchant")
        let merchantIdentifier = raw.removingPercentEncoding ?? raw
        let eventId = try context.parameters.require("eventId")
        // Debug only: a flood of made-up notifications must not become a flood of log lines.
        guard MerchantTokenEvent.isValidIdentifier(eventId) else {
            context.logger.debug("a merchant token notification with an event ID Apple does not send: ignored")
            return Response(status: .ok)
        }
        guard fetching, let merchant = directory.merchant(identifier: merchantIdentifier) else {
            context.logger.debug("a merchant token notification for no merchant Orchard can ask Apple for: ignored")
            return Response(status: .ok)
        }
        let item = TokenEventItem.received(
            merchantIdentifier: merchant.merchantIdentifier, eventId: eventId, source: context.clientAddress?.rateLimitKey ?? "unknown",
            at: time.now)
        do {
            try await record(item)
            return Response(status: .ok)
        } catch let error as OrchardError {
            throw error
        } catch {
            context.logger.error(
                "a merchant token notification could not be recorded: Apple will notify again",
                metadata: ["merchant": "\(merchant.merchantIdentifier)", "event": "\(eventId)", "error": "\(error)"])
            return Response(status: .internalServerError)
        }
    }

    /// Records `item` unless its merchant's bucket or its source's pending items are full, for a
    /// source Apple has not vouched for; throws the 429 to answer otherwise.
    private func record(_ item: TokenEventItem) async throws {
        // The source's standing is read from the inbox only when something is full: a trusted
        // source (Apple's) is let through both.
        var trusted: Bool?
        // The merchant's bucket stops a flood spread over many sources.
        if let refusal = limiter.admit(.tokenEvents, client: nil, merchant: item.merchantIdentifier) {
            trusted = try await isTrusted(item.source)
            guard trusted == true else {
                throw OrchardError(
                    .rateLimited, "too many token notifications for this merchant; try again in \(refusal.retryAfter) s",
                    retryAfter: refusal.retryAfter)
            }
        }
        var recording = try await store.recordTokenEvent(item, maxPendingFromSource: policy.maxPending(trusted: false))
        if recording == .sourceFull {
            if trusted == nil { trusted = try await isTrusted(item.source) }
            if trusted == true {
                recording = try await store.recordTokenEvent(item, maxPendingFromSource: policy.maxPending(trusted: true))
            }
        }
        guard recording != .sourceFull else {
            throw OrchardError(
                .rateLimited, "too many token notifications from this address are waiting; try again in \(policy.sourceFullRetryAfter) s",
                retryAfter: policy.sourceFullRetryAfter)
        }
    }

    private func isTrusted(_ source: String) async throws -> Bool {
        policy.isTrusted(try await store.tokenEventStandings(sources: [source])[source] ?? .unknown)
    }
}
