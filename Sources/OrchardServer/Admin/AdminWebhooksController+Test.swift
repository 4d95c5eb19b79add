import ApplePay
import Foundation
import Hummingbird
import OrchardCore
import OrchardServices

/// `POST /admin/webhooks/test`: a signed sample event of one type, sent now to a merchant's
/// endpoint through the same transport, destination checks and signing as real deliveries,
/// with the shop's answer returned. Not written to the outbox: it is never retried or replayed.
extension AdminWebhooksController {
    struct TestBody: Decodable {
        var merchantIdentifier: String
        var type: String
    }

    struct TestAnswer: ResponseEncodable {
        var eventId: String
        var type: String
        var merchantIdentifier: String
        var url: String
        /// Whether the endpoint answered 2xx.
        var delivered: Bool
        /// Nil when no answer came (``error`` says why).
        var status: Int?
        /// The first ``bodyLimit`` bytes of the answer, as UTF-8 (outside text: show it escaped).
        var body: String?
        var error: String?
    }

    /// How much of the shop's answer is returned: enough to read an error page's start.
    static let bodyLimit = 2048

    func addTestRoute(to admin: RouteCollection<OrchardRequestContext>) {
        admin.postJSON("webhooks/test") { request, context in
            let body = try await request.decode(as: TestBody.self, context: context)
            guard let type = WebhookEventType(rawValue: body.type) else {
                throw OrchardError(
                    .invalidRequest,
                    "type must be one of \(WebhookEventType.allCases.map(\.rawValue).joined(separator: ", ")); \(body.type.prefix(64)) is not an event type"
                )
            }
            return try await sendTest(type, merchant: body.merchantIdentifier)
        }
    }

    func sendTest(_ type: WebhookEventType, merchant: String) async throws -> TestAnswer {
        guard let directory, let transport else {
            throw OrchardError(.invalidState, "this server sends no webhooks (it calls no shops)")
        }
        guard directory.merchant(identifier: merchant) != nil || directory.platformIdentifier == merchant else {
            throw OrchardError(.notFound, "there is no merchant \(merchant.prefix(128))")
        }
        guard let endpoint = directory.webhook(for: merchant) else {
            throw OrchardError(.invalidState, "merchant \(merchant.prefix(128)) has no webhook endpoint")
        }
        let event = try WebhookEvent.sample(type, merchantIdentifier: merchant, at: time.now)
        let headers = endpoint.deliveryHeaders(
            eventId: event.id, type: type.rawValue, merchantIdentifier: event.merchantIdentifier, body: event.payload, at: time.now)
        var answer = TestAnswer(
            eventId: event.id, type: type.rawValue, merchantIdentifier: merchant, url: endpoint.url, delivered: false)
        do {
            let reply = try await transport.post(to: endpoint, headers: headers, body: event.payload, timeout: timeout, merchant: merchant)
            answer.status = reply.status
            answer.delivered = (200..<300).contains(reply.status)
            answer.body = String(decoding: reply.body.prefix(Self.bodyLimit), as: UTF8.self)
        } catch {
            answer.error = String("\(error)".prefix(500))
        }
        return answer
    }
}
