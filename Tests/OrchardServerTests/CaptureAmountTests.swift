import CurlClient
import Foundation
import OrchardCore
import OrchardServerTesting
import OrchardTesting
import Testing

/// `POST /v1/payments/{id}/capture` with an optional `{"amount"}`: part of the authorization,
/// shown as `amountCaptured`; refunds bounded by it. Through the router, on the record processor.
@Suite("Payments API (/v1): capturing part of a payment")
struct CaptureAmountTests {
    /// An in-app payment of 19.90 EUR, authorized.
    func authorized(_ server: RouterHarness, key: String, _ name: String) async throws -> String {
        let request = try await APIPayments.create(server, key: key, idempotencyKey: name)
        let body = try APIPayments.inAppBody(try APIPayments.mint(request.applicationData), .object)
        let answer = try await server.api("POST", "/v1/payment-requests/\(request.id)/authorize", key: key, json: body)
        #expect(answer.status == 200, "\(String(describing: answer.json))")
        return try #require((answer.json?["payment"] as? [String: Any])?["id"] as? String)
    }

    @Test("an amount of 1 to the authorized amount is captured and shown; another amount is a 400, a body not JSON a 415, none the whole")
    func captureAmount() async throws {
        try await RouterHarness.with { server in
            let key = try await server.apiKey()
            let id = try await authorized(server, key: key, "part")
            for body in [#"{"amount": 0}"#, #"{"amount": 1991}"#, #"{"amount": "5"}"#, #"{"amount": 1.5}"#, "[]"] {
                let refused = try await server.api("POST", "/v1/payments/\(id)/capture", key: key, json: body)
                #expect(refused.status == 400, "\(body): \(String(describing: refused.json))")
            }
            let plain = try await server.respond(
                "POST", "/v1/payments/\(id)/capture", host: "api.internal",
                headers: [("Host", "api.internal"), ("Authorization", "Bearer \(key)"), ("Content-Type", "text/plain")],
                body: Array(#"{"amount": 500}"#.utf8))
            #expect(plain.status == 415)
            let captured = try await server.api("POST", "/v1/payments/\(id)/capture", key: key, json: #"{"amount": 1500}"#)
            #expect(captured.status == 200, "\(String(describing: captured.json))")
            let payment = try #require(captured.json?["payment"] as? [String: Any])
            #expect(payment["state"] as? String == "settled" && payment["amountCaptured"] as? Int == 1500)
            let over = try await server.api("POST", "/v1/payments/\(id)/refunds", key: key, json: #"{"amount": 1501}"#, idempotencyKey: "o")
            #expect(over.status == 422 && over.errorCode == "refund_too_large")
            let rest = try await server.api("POST", "/v1/payments/\(id)/refunds", key: key, json: "{}", idempotencyKey: "r")
            #expect(rest.status == 201 && rest.json?["amount"] as? Int == 1500)

            let whole = try await authorized(server, key: key, "whole")
            let all = try await server.api("POST", "/v1/payments/\(whole)/capture", key: key)
            #expect((all.json?["payment"] as? [String: Any])?["amountCaptured"] as? Int == 1990)
        }
    }
}

extension CaptureAmountTests {
    @Test("a refund of an authorized payment releases it: all voids it, part captures the rest; answered 201 as a refund, released")
    func refundBeforeCapture() async throws {
        try await RouterHarness.with { server in
            let key = try await server.apiKey()
            let id = try await authorized(server, key: key, "release-part")
            let part = try await server.api("POST", "/v1/payments/\(id)/refunds", key: key, json: #"{"amount": 490}"#, idempotencyKey: "p")
            #expect(part.status == 201 && part.json?["released"] as? Bool == true && part.json?["state"] as? String == "refunded")
            let read = try await server.api("GET", "/v1/payments/\(id)", key: key)
            let payment = try #require(read.json?["payment"] as? [String: Any])
            #expect(payment["state"] as? String == "settled" && payment["amountCaptured"] as? Int == 1500)
            #expect(payment["amountRefunded"] as? Int == 490)
            let again = try await server.api("POST", "/v1/payments/\(id)/refunds", key: key, json: #"{"amount": 490}"#, idempotencyKey: "p")
            #expect(again.status == 201 && again.json?["id"] as? String == part.json?["id"] as? String)

            let whole = try await authorized(server, key: key, "release-all")
            let all = try await server.api("POST", "/v1/payments/\(whole)/refunds", key: key, json: "{}", idempotencyKey: "w")
            #expect(all.status == 201 && all.json?["released"] as? Bool == true && all.json?["amount"] as? Int == 1990)
            let voided = try await server.api("GET", "/v1/payments/\(whole)", key: key)
            #expect((voided.json?["payment"] as? [String: Any])?["state"] as? String == "cancelled")
        }
    }
}
