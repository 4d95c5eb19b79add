import ApplePay
import Crypto
import CurlClient
import Foundation
import OrchardCore
import OrchardInMemory
import OrchardServerTesting
import OrchardTesting
import Testing

/// What a shop platform (pretix, say) needed of the payments API: withdrawing or extending a
/// payment request, which merchant a key is, and the request's idempotency key on the request and its events.
@Suite("Payments API for platforms")
struct PlatformAPITests {
    @Test("a request withdrawn before it is paid is cancelled with one payment_request.cancelled event; its page can no longer pay it")
    func cancel() async throws {
        try await RouterHarness.with { server in
            let key = try await server.apiKey()
            let request = try await APIPayments.create(server, key: key, idempotencyKey: "withdrawn")
            let cancelled = try await server.api("POST", "/v1/payment-requests/\(request.id)/cancel", key: key)
            #expect(cancelled.status == 200 && cancelled.json?["status"] as? String == "cancelled", "\(String(describing: cancelled.json))")
            let again = try await server.api("POST", "/v1/payment-requests/\(request.id)/cancel", key: key)
            #expect(again.status == 200 && again.json?["status"] as? String == "cancelled", "cancelling twice answers it as it is")
            #expect(cancelled.json?["idempotencyKey"] as? String == "withdrawn", "the request names the key it was created with")
            let events = try await server.store.webhookEvents(merchantIdentifier: TestMaterial.merchantIdentifier, state: nil, limit: 100)
            let withdrawn = events.filter { $0.type == .paymentRequestCancelled }
            #expect(withdrawn.count == 1)
            let body = try #require(try JSONSerialization.jsonObject(with: Data(withdrawn.first?.payload ?? [])) as? [String: Any])
            let reference = (body["data"] as? [String: Any])?["paymentRequest"] as? [String: Any]
            #expect(reference?["id"] as? String == request.id && reference?["idempotencyKey"] as? String == "withdrawn")

            let paid = try await server.api(
                "POST", "/v1/payment-requests/\(request.id)/authorize", key: key,
                json: try APIPayments.inAppBody(try APIPayments.mint(request.applicationData), .object))
            #expect(paid.status == 409 && paid.errorCode == "order_not_open", "\(String(describing: paid.json))")
            #expect(try await server.store.payments(orderId: request.id).isEmpty)
        }
    }

    @Test("a paid request is not withdrawn (409), nor another merchant's (404)")
    func cancelRefused() async throws {
        try await RouterHarness.with(secondMerchant: true) { server in
            let key = try await server.apiKey()
            let request = try await APIPayments.create(server, key: key, idempotencyKey: "paid-first")
            let path = "/v1/payment-requests/\(request.id)"
            let other = try await server.api(
                "POST", path + "/cancel", key: try await server.apiKey(for: TestMaterial.secondMerchantIdentifier))
            #expect(other.status == 404)
            let paid = try await server.api(
                "POST", path + "/authorize", key: key,
                json: try APIPayments.inAppBody(try APIPayments.mint(request.applicationData), .object))
            #expect(paid.status == 200)
            let refused = try await server.api("POST", path + "/cancel", key: key)
            #expect(refused.status == 409 && refused.errorCode == "order_not_open", "\(String(describing: refused.json))")
            #expect(try await server.api("GET", path, key: key).json?["status"] as? String == "paid")
        }
    }

    @Test("extending keeps a request payable longer, never shortens it, and refuses a paid or cancelled one")
    func extend() async throws {
        let now = Date(timeIntervalSince1970: Date().timeIntervalSince1970.rounded(.down))
        try await RouterHarness.with(time: .fixed(now), secondMerchant: true) { server in
            let key = try await server.apiKey()
            let request = try await APIPayments.create(server, key: key, idempotencyKey: "extended")
            let path = "/v1/payment-requests/\(request.id)"
            func expiry(_ answer: CurlResponse) -> Date? {
                (answer.json?["expiresAt"] as? String).flatMap { try? Date($0, strategy: .iso8601) }
            }
            let longer = try await server.api("POST", path + "/extend", key: key, json: #"{"expiresInSeconds": 86400}"#)
            #expect(longer.status == 200 && expiry(longer) == now.addingTimeInterval(86_400), "\(String(describing: longer.json))")
            let shorter = try await server.api("POST", path + "/extend", key: key, json: #"{"expiresInSeconds": 3600}"#)
            #expect(shorter.status == 200 && expiry(shorter) == now.addingTimeInterval(86_400), "never shortened")
            #expect(try await server.store.order(id: request.id)?.expiresAt == now.addingTimeInterval(86_400))
            for seconds in [59, 2_592_001] {
                let refused = try await server.api("POST", path + "/extend", key: key, json: #"{"expiresInSeconds": \#(seconds)}"#)
                #expect(refused.status == 400 && refused.errorCode == "invalid_request", "\(seconds)")
            }
            let other = try await server.api(
                "POST", path + "/extend", key: try await server.apiKey(for: TestMaterial.secondMerchantIdentifier),
                json: #"{"expiresInSeconds": 3600}"#)
            #expect(other.status == 404)

            let paid = try await server.api(
                "POST", path + "/authorize", key: key,
                json: try APIPayments.inAppBody(try APIPayments.mint(request.applicationData), .object))
            #expect(paid.status == 200)
            let late = try await server.api("POST", path + "/extend", key: key, json: #"{"expiresInSeconds": 172800}"#)
            #expect(late.status == 409 && late.errorCode == "order_not_open", "\(String(describing: late.json))")
            let withdrawn = try await APIPayments.create(server, key: key, idempotencyKey: "withdrawn-then-extended")
            _ = try await server.api("POST", "/v1/payment-requests/\(withdrawn.id)/cancel", key: key)
            let cancelled = try await server.api(
                "POST", "/v1/payment-requests/\(withdrawn.id)/extend", key: key, json: #"{"expiresInSeconds": 3600}"#)
            #expect(cancelled.status == 409 && cancelled.errorCode == "order_not_open")
        }
    }

    @Test("GET /v1/merchant names the key's merchant, its domains, processor, wallets and the currencies with their exponents")
    func merchant() async throws {
        try await RouterHarness.with(secondMerchant: true) { server in
            let answer = try await server.api("GET", "/v1/merchant", key: try await server.apiKey())
            let json = try #require(answer.json)
            #expect(answer.status == 200 && json["merchantIdentifier"] as? String == TestMaterial.merchantIdentifier)
            #expect(json["processor"] as? String == "record" && json["wallets"] as? [String] == ["applePay"])
            #expect(json["livemode"] as? Bool == false)  // record moves no money
            #expect((json["domains"] as? [String])?.contains(RouterHarness.domain) == true)
            let currencies = try #require(json["currencies"] as? [[String: Any]])
            let exponents = Dictionary(uniqueKeysWithValues: currencies.map { ($0["code"] as? String ?? "", $0["exponent"] as? Int ?? -1) })
            #expect(exponents["EUR"] == 2 && exponents["JPY"] == 0 && exponents["KWD"] == 3)
            let second = try await server.api(
                "GET", "/v1/merchant", key: try await server.apiKey(for: TestMaterial.secondMerchantIdentifier))
            #expect(second.json?["merchantIdentifier"] as? String == TestMaterial.secondMerchantIdentifier)
            #expect(try await server.send("GET", "/v1/merchant", host: "api.internal").status == 401)
        }
    }
}
