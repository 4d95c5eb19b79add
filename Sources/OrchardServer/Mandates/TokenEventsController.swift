import ApplePay
import Foundation
import Hummingbird
import OrchardCore

/// `GET /apple-pay/token-events/{merchant}/notification/merchantToken/{eventId}`: Apple's
/// merchant token notifications. Apple appends `notification/merchantToken/{eventId}` to the
/// `tokenNotificationURL` the payment request named, and sends no body: the event itself is
/// fetched from Apple's gateway over mutual TLS, so a forged notification changes nothing.
struct TokenEventsController {
    let lifecycle: MandateLifecycle

    /// Where Apple notifies a merchant's token events, relative to Orchard's public address.
    static func notificationPath(merchantIdentifier: String) -> String {
        "apple-pay/token-events/"
            + (merchantIdentifier.addingPercentEncoding(withAllowedCharacters: .urlPathSegmentUnreserved) ?? merchantIdentifier)
    }

    func addRoutes(to router: Router<OrchardRequestContext>) {
        router.get("/apple-pay/token-events/{merchant}/notification/merchantToken/{eventId}") { _, context in
            let merchant = try context.parameters.require("merchant")
            let eventId = try context.parameters.require("eventId")
            // 200 even for an event Apple does not know, as Apple requires; 500 only when Apple
            // could not be asked, so that Apple notifies again.
            switch await lifecycle.handleNotification(eventId: eventId, merchantIdentifier: merchant) {
            case .ok: return Response(status: .ok)
            case .retryLater: return Response(status: .internalServerError)
            }
        }
    }
}
