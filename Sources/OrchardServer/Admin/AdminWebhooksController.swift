import ApplePay
import Foundation
import Hummingbird
import OrchardCore
import OrchardServices

/// The webhook outbox for operators: `/admin/webhooks`, replaying an event, and sending a
/// sample one (`/admin/webhooks/test`).
struct AdminWebhooksController {
    let store: any WebhookOutbox
    let time: TimeSource
    /// Who gets the sample events, and how they are sent; nil on a server that calls no shops.
    var directory: MerchantDirectory? = nil
    var transport: (any ShopTransport)? = nil
    /// One sample's deadline: a real delivery's (`webhooks.timeoutMilliseconds`).
    var timeout: Duration = .seconds(10)

    struct EventView: ResponseEncodable {
        var event: WebhookEvent
        /// The body as sent, for reading.
        var payload: String
    }

    struct EventList: ResponseEncodable { var events: [EventView] }

    /// Its routes in the `/admin` group, which checks the admin token.
    var routes: RouteCollection<OrchardRequestContext> {
        let admin = RouteCollection(context: OrchardRequestContext.self)
        admin.get("webhooks") { request, _ in
            let query = request.uri.queryParameters
            let state = try query["state"].map { raw in
                guard let state = WebhookEvent.DeliveryState(rawValue: String(raw)) else {
                    throw OrchardError(.invalidRequest, "state must be pending, delivered, failed or skipped")
                }
                return state
            }
            let limit = try query.adminLimit(default: 50)
            let events = try await store.webhookEvents(merchantIdentifier: query["merchant"].map(String.init), state: state, limit: limit)
            return EventList(events: events.map { EventView(event: $0, payload: String(decoding: $0.payload, as: UTF8.self)) })
        }
        admin.post("webhooks/{event}/replay") { _, context in
            let id = try context.parameters.require("event")
            guard try await store.replayWebhookEvent(id: id, at: time.now), let event = try await store.webhookEvent(id: id) else {
                throw OrchardError(.notFound, "there is no webhook event \(id)")
            }
            return EventView(event: event, payload: String(decoding: event.payload, as: UTF8.self))
        }
        addTestRoute(to: admin)
        return admin
    }
}

extension WebhookEvent: ResponseEncodable {}
