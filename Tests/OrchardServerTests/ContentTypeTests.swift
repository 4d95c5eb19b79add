import ApplePay
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import OrchardCore
import OrchardInMemory
import OrchardServerTesting
import OrchardTesting
import Testing

@testable import OrchardConfiguration
@testable import OrchardServer
@testable import OrchardServices

/// JSON routes take `application/json` only: the bodies a page on another site can make a
/// shopper's browser send without a CORS preflight (text/plain, form-encoded, multipart, or no
/// Content-Type at all) get a 415 before a rate-limit token, a call to Apple or a write is spent.
@Suite("Content types: JSON routes refuse cross-site simple requests")
struct ContentTypeTests {
    /// One request a minute per client and per merchant, burst 1: a second admitted call is a 429.
    static let oneAMinute: RateLimitSettings = {
        var limits = RateLimitSettings.defaults
        for action in [RateLimitSettings.Action.merchantSessions, .orders] {
            limits.perClient[action] = RateLimit(perMinute: 1, burst: 1)
            limits.perMerchant[action] = RateLimit(perMinute: 1, burst: 1)
        }
        return limits
    }()

    /// What a cross-site form or `fetch(…, {mode: "no-cors"})` can send without a preflight.
    static let simpleTypes: [String?] = [
        "text/plain", "text/plain;charset=UTF-8", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", nil,
    ]

    static func withApp(_ body: @escaping @Sendable (any TestClientProtocol, InMemoryStore, StubSessionCounter) async throws -> Void)
        async throws
    {
        let store = InMemoryStore()
        let sessions = StubSessionCounter()
        let dependencies = try ApplicationDependencies.testing(store: store, sessions: sessions) { $0.limits = oneAMinute }
        try await buildApplication(dependencies).test(.router) { client in
            try await body(client, store, sessions)
        }
    }

    static func send(_ client: any TestClientProtocol, _ uri: String, type: String?, body: String) async throws -> TestResponse {
        var headers: HTTPFields = [:]
        if let type { headers[.contentType] = type }
        return try await client.execute(uri: uri, method: .post, headers: headers, body: ByteBuffer(string: body))
    }

    static func code(_ response: TestResponse) -> String? {
        let json = try? JSONSerialization.jsonObject(with: Data(response.body.readableBytesView)) as? [String: Any]
        return (json?["error"] as? [String: Any])?["code"] as? String
    }

    @Test("POST /api/orders: text/plain, form-encoded, multipart or no Content-Type is a 415 that spends no order budget")
    func orders() async throws {
        try await Self.withApp { client, _, _ in
            let order = #"{"items": [{"productId": "apple", "quantity": 1}]}"#
            for type in Self.simpleTypes {
                let refused = try await Self.send(client, "/api/orders", type: type, body: order)
                #expect(refused.status == .unsupportedMediaType, "\(type ?? "no Content-Type")")
                #expect(Self.code(refused) == "unsupported_media_type")
                #expect(refused.headers[.accept] == "application/json")
                #expect(refused.headers[.xContentTypeOptions] == "nosniff")
            }
            // The handler never ran: the bucket's one token is still there, so the first JSON order is
            // taken and the next one is a 429.
            #expect(try await Self.send(client, "/api/orders", type: "application/json", body: order).status == .created)
            #expect(try await Self.send(client, "/api/orders", type: "application/json", body: order).status == .tooManyRequests)
        }
    }

    @Test("POST /api/apple-pay/session: the same refusals reach neither the rate limiter nor Apple")
    func session() async throws {
        try await Self.withApp { client, _, sessions in
            let body = #"{"validationURL": "https://apple-pay-gateway.apple.com/paymentservices/startSession"}"#
            for type in Self.simpleTypes {
                let refused = try await Self.send(client, "/api/apple-pay/session", type: type, body: body)
                #expect(refused.status == .unsupportedMediaType, "\(type ?? "no Content-Type")")
                // An empty body with no Content-Type (a bodiless no-cors fetch) is refused too.
                let empty = try await Self.send(client, "/api/apple-pay/session", type: type, body: "")
                #expect(empty.status == .unsupportedMediaType, "empty, \(type ?? "no Content-Type")")
            }
            #expect(sessions.count == 0)
            #expect(try await Self.send(client, "/api/apple-pay/session", type: "application/json", body: body).status == .ok)
            #expect(try await Self.send(client, "/api/apple-pay/session", type: "application/json", body: body).status == .tooManyRequests)
            #expect(sessions.count == 1)
        }
    }

    @Test("application/json is taken in any case, with a charset=utf-8 parameter; other parameters and look-alikes are not")
    func mediaTypeParsing() {
        for accepted in [
            "application/json", "Application/JSON", "application/json; charset=utf-8", "application/json;charset=UTF-8",
            "application/json ; charset=\"utf-8\"",
        ] {
            #expect(JSONContentTypeMiddleware<OrchardRequestContext>.isJSON(accepted), "\(accepted)")
        }
        for refused in [
            "application/jsonp", "application/json-patch+json", "text/json", "application/json; charset=latin1",
            "application/json; boundary=x", "application/json, text/plain", "application/json;", "", " ",
        ] {
            #expect(!JSONContentTypeMiddleware<OrchardRequestContext>.isJSON(refused), "\(refused)")
        }
    }
}

/// Answers like ``StubSessions`` and counts how often it was asked.
final class StubSessionCounter: MerchantSessionService, @unchecked Sendable {
    private let lock = NSLock()
    private var calls = 0

    var count: Int { lock.withLock { calls } }

    func createSession(_ request: MerchantSessionRequest, for merchant: MerchantConfiguration) async throws(GatewayError) -> [UInt8] {
        lock.withLock { calls += 1 }
        return try await StubSessions().createSession(request, for: merchant)
    }
}
