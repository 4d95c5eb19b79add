import CurlClient
import Foundation
import OrchardCore
import OrchardIntegrationTesting
import OrchardServerTesting
import OrchardTesting
import Testing

/// `capture: "automatic"` through a real server and mock Worldpay: the app's authorization is
/// answered at once, and the capture loop, woken by it, settles the payment at the processor.
@Suite("Automatic capture over mock Worldpay")
struct AutomaticCaptureTests {
    @Test("a payment request created with capture automatic is captured at Worldpay right after its authorization, with payment.settled")
    func capturedAfterAuthorization() async throws {
        try await ProcessorFixture.with(.worldpay) { fixture in
            let server = fixture.server
            let key = try await server.apiKey()
            let created = try await server.api(
                "POST", "/v1/payment-requests", key: key,
                json: #"{"amount": 1990, "currency": "EUR", "reference": "auto-1", "capture": "automatic"}"#, idempotencyKey: "auto-1")
            #expect(created.status == 201 && created.json?["capture"] as? String == "automatic")
            let id = try #require(created.json?["id"] as? String)
            let request = try #require(created.json?["paymentRequest"] as? [String: Any])
            let applicationData = try #require(Data(base64Encoded: request["applicationData"] as? String ?? ""))
            let token = try APIPayments.mint(Array(applicationData))
            let answer = try await server.api(
                "POST", "/v1/payment-requests/\(id)/authorize", key: key, json: try APIPayments.inAppBody(token, .object))
            #expect(answer.status == 200, "\(String(describing: answer.json))")
            let paymentId = try #require((answer.json?["payment"] as? [String: Any])?["id"] as? String)
            // The loop was woken by the authorization: the reconciler's interval here is an hour.
            let settled = try await Eventually.until {
                let read = try await server.api("GET", "/v1/payments/\(paymentId)", key: key)
                return (read.json?["payment"] as? [String: Any])?["state"] as? String == "settled"
            }
            #expect(settled)
            #expect(fixture.mock.charges.map(\.state) == [.settled], "captured at the processor once")
            let events = try await server.store.webhookEvents(merchantIdentifier: nil, state: nil, limit: 10).map(\.type.rawValue)
            #expect(events.sorted() == ["payment.authorized", "payment.settled"])
            let again = try await server.api("POST", "/v1/payments/\(paymentId)/capture", key: key)
            #expect(again.status == 409, "already captured")
        }
    }
}
