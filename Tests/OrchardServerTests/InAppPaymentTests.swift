import ApplePay
import Crypto
import CurlClient
import Foundation
import OrchardConfiguration
import OrchardCore
import OrchardInMemory
import OrchardServer
import OrchardServerTesting
import OrchardServices
import OrchardTesting
import Testing

/// The shop's iOS app pays a payment request: PassKit gives the app a `PKPaymentToken`, the app
/// sends it to the shop's backend, and the backend calls `POST /v1/payment-requests/{id}/authorize`
/// with its secret key. Same engine, same rules and webhooks as the page.
@Suite("In-app payments: /v1/payment-requests/{id}/authorize with the app's token")
struct InAppPaymentTests {
    static func json(_ response: CurlResponse) -> NSDictionary? {
        (try? JSONSerialization.jsonObject(with: Data(response.body))) as? NSDictionary
    }

    @Test(
        "authorized once in each encoding; the answer is the payment as GET /v1/payments/{id} shows it; a replay is refused",
        arguments: APIPayments.Encoding.allCases)
    func encodings(_ encoding: APIPayments.Encoding) async throws {
        try await RouterHarness.with(secondMerchant: true) { server in
            let key = try await server.apiKey()
            let request = try await APIPayments.create(server, key: key, idempotencyKey: "app-\(encoding)")
            let body = try APIPayments.inAppBody(try APIPayments.mint(request.applicationData), encoding)
            let answer = try await server.api("POST", "/v1/payment-requests/\(request.id)/authorize", key: key, json: body)
            #expect(answer.status == 200, "\(String(describing: answer.json))")
            let payment = try #require(answer.json?["payment"] as? [String: Any])
            #expect(payment["state"] as? String == "authorized" && payment["amount"] as? Int == 1990)
            #expect(payment["lastFour"] as? String == "1111" && payment["network"] as? String == "Visa")
            let paymentId = try #require(payment["id"] as? String)
            let read = try await server.api("GET", "/v1/payments/\(paymentId)", key: key)
            #expect(Self.json(read) == Self.json(answer), "the same object as GET /v1/payments/{id}")
            let shown = try await server.api("GET", "/v1/payment-requests/\(request.id)", key: key)
            #expect(shown.json?["status"] as? String == "paid")

            let replay = try await server.api("POST", "/v1/payment-requests/\(request.id)/authorize", key: key, json: body)
            #expect(replay.status == 409, "\(String(describing: replay.json))")
            #expect(try await server.store.payments(orderId: request.id).count == 1)
        }
    }

    @Test("refused, nothing paid: another merchant's key, another request's token, a simulator token, a body that is no token")
    func refusals() async throws {
        try await RouterHarness.with(secondMerchant: true) { server in
            let key = try await server.apiKey()
            let request = try await APIPayments.create(server, key: key, idempotencyKey: "app-refusals")
            let body = try APIPayments.inAppBody(try APIPayments.mint(request.applicationData), .object)
            let path = "/v1/payment-requests/\(request.id)/authorize"

            let otherKey = try await server.apiKey(for: TestMaterial.secondMerchantIdentifier)
            let stranger = try await server.api("POST", path, key: otherKey, json: body)
            #expect(stranger.status == 404 && stranger.errorCode == "not_found")

            let other = try await APIPayments.create(server, key: key, idempotencyKey: "app-other")
            let misbound = try await server.api(
                "POST", path, key: key, json: try APIPayments.inAppBody(try APIPayments.mint(other.applicationData), .base64))
            #expect(misbound.status == 422 && misbound.errorCode == "payment_mismatch", "\(String(describing: misbound.json))")

            let simulator =
                #"{"token": {"paymentData": "", "transactionIdentifier": "Simulated Identifier", "paymentMethod": {"network": "Visa"}}}"#
            let simulated = try await server.api("POST", path, key: key, json: simulator)
            #expect(simulated.status == 400 && simulated.errorCode == "simulator_token", "\(String(describing: simulated.json))")
            for junk in [#"{"token": {"paymentData": "%%%"}}"#, #"{"paymentData": {}}"#, #"{"token": {"paymentData": 7}}"#] {
                let refused = try await server.api("POST", path, key: key, json: junk)
                #expect(refused.status == 400 && refused.errorCode == "invalid_json", "\(junk): \(String(describing: refused.json))")
            }
            let missing = try await server.api("POST", "/v1/payment-requests/nope/authorize", key: key, json: body)
            #expect(missing.status == 404)
            #expect(try await server.store.payments(orderId: request.id).isEmpty)
            // And the real token still pays afterwards.
            #expect(try await server.api("POST", path, key: key, json: body).status == 200)
        }
    }

    /// Each value a hostile app (or a shop that passes the app's body on unchanged) can put where
    /// `PKPaymentToken`'s fields go: none may reach an API that traps, each is a 400.
    static let hostileValues = [
        #""Visa""#, "null", "7", "-0", "1e400", "9223372036854775808", "true", "[]", #"[{"network": "Visa"}]"#,
        #""\#(String(repeating: "x", count: 10_000))""#, #""\ud800""#,
        String(repeating: "[", count: 600) + String(repeating: "]", count: 600),
    ]

    @Test("paymentMethod and paymentData of every JSON type get a 400, nothing is paid, and the server keeps answering")
    func hostileFieldTypes() async throws {
        // Fifty refusals in a row: the router harness sets no rate limits, which would answer 429 before the parser.
        try await RouterHarness.with { server in
            let key = try await server.apiKey()
            let request = try await APIPayments.create(server, key: key, idempotencyKey: "app-hostile")
            let path = "/v1/payment-requests/\(request.id)/authorize"
            let paymentData = String(decoding: try JSONEncoder().encode(try APIPayments.mint(request.applicationData)), as: UTF8.self)
            var bodies = Self.hostileValues.map { #"{"token": {"paymentData": \#(paymentData), "paymentMethod": \#($0)}}"# }
            bodies += Self.hostileValues.map { #"{"token": {"paymentData": \#($0), "paymentMethod": {"network": "Visa"}}}"# }
            bodies += Self.hostileValues.map { #"{"token": \#($0)}"# } + Self.hostileValues
            bodies += [#"{"token": {"paymentData": \#(paymentData), "transactionIdentifier": 12}}"#, "", "{"]
            for body in bodies {
                let refused = try await server.api("POST", path, key: key, json: body)
                #expect(refused.status == 400, "\(body.prefix(120)): \(refused.status) \(String(describing: refused.json))")
                #expect(["invalid_json", "invalid_token"].contains(refused.errorCode ?? ""), "\(body.prefix(120))")
                #expect(try await server.send("GET", "/health").status == 200)
            }
            let invalidUTF8 = try await server.send(
                "POST", path, host: "api.internal", body: [0x7B, 0x22, 0xFF, 0xFE, 0x22, 0x7D],
                extraHeaders: [(name: "Authorization", value: "Bearer \(key)")])
            #expect(invalidUTF8.status == 400 && invalidUTF8.errorCode == "invalid_json")
            #expect(try await server.store.payments(orderId: request.id).isEmpty)
        }
    }
}
