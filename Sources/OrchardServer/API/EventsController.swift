import Hummingbird
import NIOCore
import OrchardCore

/// `GET /v1/events`: the key's merchant's webhook events, as the outbox still holds them, for a
/// shop catching up after missing deliveries (``WebhookEventFeed``). Another merchant's event as
/// the cursor is "not found", like an unknown one.
struct EventsController {
    let outbox: any WebhookOutbox

    /// The routes the router adds to the `/v1` group.
    var routes: RouteCollection<OrchardRequestContext> {
        let v1 = RouteCollection(context: OrchardRequestContext.self)
        v1.get("events") { request, context in
            let merchant = try context.requireAPIMerchant().merchantIdentifier
            let query = request.uri.queryParameters
            let limit = try Self.limit(query["limit"])
            let after = try query["after"].map { raw in
                guard WebhookEventFeed.isEventIdentifier(raw) else {
                    throw OrchardError(.invalidRequest, "after must be an event ID (evt_ and 32 hex digits), as a page's next gives it")
                }
                return String(raw)
            }
            guard let events = try await outbox.webhookEventFeed(of: merchant, after: after, limit: limit) else {
                throw OrchardError(
                    .notFound,
                    "after is not an event of this merchant: it never was one, or it was purged after the outbox's retention; "
                        + "start again without after, from the oldest event kept")
            }
            return Response(
                status: .ok, headers: [.contentType: "application/json", .cacheControl: "no-store"],
                body: ResponseBody(byteBuffer: ByteBuffer(bytes: WebhookEventFeed.body(events))))
        }
        return v1
    }

    /// `limit`: 1–100, 50 when absent.
    static func limit(_ raw: Substring?) throws -> Int {
        guard let raw else { return WebhookEventFeed.defaultLimit }
        guard let limit = Int(raw), WebhookEventFeed.limits.contains(limit) else {
            throw OrchardError(
                .invalidRequest,
                "limit must be a whole number from \(WebhookEventFeed.limits.lowerBound) to \(WebhookEventFeed.limits.upperBound)")
        }
        return limit
    }
}
