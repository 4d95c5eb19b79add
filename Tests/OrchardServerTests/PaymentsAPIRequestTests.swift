import CurlClient
import Foundation
import OrchardCore
import OrchardInMemory
import OrchardServerTesting
import OrchardTesting
import Testing

/// The payments API's keys and payment requests as a shop's backend uses them, through the router
/// (the webhooks each step sends are PaymentsAPITests', against a receiver over HTTP).
@Suite("Payments API (/v1): keys and payment requests")
struct PaymentsAPIRequestTests {
    @Test("calls without a valid key get 401 and change nothing; a revoked key stops working")
    func keys() async throws {
        try await RouterHarness.with(secondMerchant: true) { server in
            let key = try await server.apiKey()
            let id = try #require(APIKeyRecord.keyId(ofSecret: key))
            let forged = "osk_\(id)_" + String(repeating: "A", count: 43)
            for bad in ["", "osk_nonsense", forged, "Basic \(key)"] {
                let response = try await server.api(
                    "POST", "/v1/payment-requests", key: bad, json: APIPayments.cart, idempotencyKey: "k-\(bad.count)")
                #expect(response.status == 401, "\(bad.prefix(12))")
                #expect(response.errorCode == "unauthorized")
            }
            let none = try await server.send("GET", "/v1/payment-requests/x", host: "api.internal")
            #expect(none.status == 401)
            #expect(try await server.store.webhookEvents(merchantIdentifier: nil, state: nil, limit: 10).isEmpty)

            let second = try await server.apiKey()
            await #expect(throws: CoreError.self) { _ = try await server.apiKey() }  // two active at most
            #expect(try await server.store.revokeAPIKey(id: id, at: Date()))
            let revoked = try await server.api("GET", "/v1/payment-requests/x", key: key)
            #expect(revoked.status == 401)
            let other = try await server.api("GET", "/v1/payment-requests/x", key: second)
            #expect(other.status == 404)
        }
    }

    @Test("a payment request is created once per Idempotency-Key, even 20 times at once; another body is a 422")
    func idempotency() async throws {
        try await RouterHarness.with(secondMerchant: true) { server in
            let key = try await server.apiKey()
            let answers = try await withThrowingTaskGroup(of: CurlResponse.self) { group in
                for _ in 0..<20 {
                    group.addTask {
                        try await server.api("POST", "/v1/payment-requests", key: key, json: APIPayments.cart, idempotencyKey: "same")
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(answers.filter { $0.status == 201 }.count == 1)
            #expect(answers.filter { $0.status == 200 }.count == 19)
            let ids = Set(answers.compactMap { $0.json?["id"] as? String })
            let secrets = Set(answers.compactMap { $0.json?["clientSecret"] as? String })
            #expect(ids.count == 1 && secrets.count == 1)

            let reordered = try await server.api(
                "POST", "/v1/payment-requests", key: key, json: APIPayments.cart.replacingOccurrences(of: "\n", with: " "),
                idempotencyKey: "same")
            #expect(reordered.status == 200)
            let changed = try await server.api(
                "POST", "/v1/payment-requests", key: key, json: APIPayments.cart.replacingOccurrences(of: "order-1001", with: "order-1002"),
                idempotencyKey: "same")
            #expect(changed.status == 422)
            #expect(changed.errorCode == "idempotency_mismatch")
            let missing = try await server.api("POST", "/v1/payment-requests", key: key, json: APIPayments.cart)
            #expect(missing.status == 400)
            #expect(missing.errorMessage?.contains("Idempotency-Key") == true)
        }
    }

    @Test("bad carts are refused with a message naming the problem, and create nothing")
    func validation() async throws {
        try await RouterHarness.with(secondMerchant: true) { server in
            let key = try await server.apiKey()
            let cases: [(String, String)] = [
                (#"{"amount": 0, "currency": "EUR", "reference": "r"}"#, "amount"),
                (#"{"amount": 100, "currency": "XXX", "reference": "r"}"#, "currency"),
                (#"{"amount": 100, "currency": "EUR", "reference": ""}"#, "reference"),
                (#"{"amount": 100, "currency": "EUR", "reference": "r", "lineItems": [{"label": "A", "amount": 99}]}"#, "add up"),
                (#"{"amount": 100, "currency": "EUR", "reference": "r", "supportedNetworks": ["bitcoin"]}"#, "supportedNetworks"),
                (#"{"amount": 100, "currency": "EUR", "reference": "r", "requiredShippingContactFields": ["ssn"]}"#, "requiredShipping"),
                (#"{"amount": 100, "currency": "EUR", "reference": "r", "expiresInSeconds": 5}"#, "expiresInSeconds"),
                (#"{"amount": "1.00", "currency": "EUR", "reference": "r"}"#, "JSON"),
                // Numbers where arithmetic traps (abs(Int64.min) crashed the process before).
                (
                    #"{"amount": 100, "currency": "EUR", "reference": "r", "lineItems": [{"label": "A", "amount": -9223372036854775808}]}"#,
                    "line item"
                ),
                (
                    #"{"amount": 100, "currency": "EUR", "reference": "r", "lineItems": [{"label": "A", "amount": 9223372036854775807}, {"label": "B", "amount": 9223372036854775807}]}"#,
                    "line item"
                ),
                (#"{"amount": 9223372036854775807, "currency": "EUR", "reference": "r"}"#, "amount"),
                (
                    #"{"amount": 100, "currency": "EUR", "reference": "r", "shippingMethods": [{"identifier": "x", "label": "X", "amount": 9223372036854775807}]}"#,
                    "shipping method"
                ),
                (
                    #"{"amount": 100, "currency": "EUR", "reference": "r", "lineItems": [{"label": "A", "amount": 9223372036854775808}]}"#,
                    "JSON"
                ),
            ]
            for (index, (body, word)) in cases.enumerated() {
                let response = try await server.api("POST", "/v1/payment-requests", key: key, json: body, idempotencyKey: "v\(index)")
                #expect(response.status == 400, "\(body)")
                #expect(response.errorMessage?.contains(word) == true, "\(response.errorMessage ?? "") should name \(word)")
            }
            // Still serving, and nothing was created.
            #expect(try await server.api("GET", "/v1/payment-requests/pr_none", key: key).status == 404)
        }
    }

    @Test("capture is manual unless the request says automatic, and is shown on the request; any other value is a 400 naming it")
    func captureMode() async throws {
        try await RouterHarness.with { server in
            let key = try await server.apiKey()
            for (index, (field, shown)) in [
                ("", "manual"), (#", "capture": "manual""#, "manual"), (#", "capture": "automatic""#, "automatic"),
            ]
            .enumerated() {
                let body = #"{"amount": 100, "currency": "EUR", "reference": "r\#(index)""# + field + "}"
                let created = try await server.api("POST", "/v1/payment-requests", key: key, json: body, idempotencyKey: "c\(index)")
                #expect(created.status == 201, "\(body)")
                #expect(created.json?["capture"] as? String == shown, "\(body)")
                let id = try #require(created.json?["id"] as? String)
                let read = try await server.api("GET", "/v1/payment-requests/\(id)", key: key)
                #expect(read.json?["capture"] as? String == shown, "kept")
            }
            for (index, value) in [#""Automatic""#, #""immediate""#, "true", "1"].enumerated() {
                let body = #"{"amount": 100, "currency": "EUR", "reference": "r", "capture": "# + value + "}"
                let refused = try await server.api("POST", "/v1/payment-requests", key: key, json: body, idempotencyKey: "x\(index)")
                #expect(refused.status == 400, "\(value)")
                #expect(refused.errorMessage?.contains("capture") == true, "\(refused.errorMessage ?? "")")
            }
        }
    }
}
