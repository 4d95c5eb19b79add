import CurlClient
import Foundation
import OrchardCore
import OrchardInMemory
import OrchardServerTesting
import OrchardTesting
import Testing

/// `GET /v1/events`: a shop that was down catches up on the events it missed, page by page.
@Suite("Payments API: the event feed (GET /v1/events)")
struct EventFeedRouterTests {
    /// Writes `count` payment_request.cancelled events for the key's merchant; their IDs, in order.
    static func cancelled(_ server: RouterHarness, key: String, count: Int, prefix: String) async throws -> [String] {
        for index in 0..<count {
            let request = try await APIPayments.create(server, key: key, idempotencyKey: "\(prefix)-\(index)")
            let answer = try await server.api("POST", "/v1/payment-requests/\(request.id)/cancel", key: key)
            #expect(answer.status == 200)
        }
        let events = try await server.store.webhookEvents(merchantIdentifier: nil, state: nil, limit: 1000)
        return events.reversed().filter { $0.type == .paymentRequestCancelled }.suffix(count).map(\.id)
    }

    @Test("pages the key's merchant's events, each exactly its webhook body, with next as the cursor; null on an empty page")
    func pages() async throws {
        try await RouterHarness.with(secondMerchant: true) { server in
            let key = try await server.apiKey()
            let ids = try await Self.cancelled(server, key: key, count: 3, prefix: "a")
            let other = try await server.apiKey(for: TestMaterial.secondMerchantIdentifier)
            let theirs = try await Self.cancelled(server, key: other, count: 1, prefix: "b")

            let all = try await server.api("GET", "/v1/events", key: key)
            #expect(all.status == 200)
            let events = try #require(all.json?["events"] as? [[String: Any]])
            #expect(events.map { $0["id"] as? String } == ids && all.json?["next"] as? String == ids.last)
            // Byte for byte the body a delivery signs and sends.
            let first = try #require(try await server.store.webhookEvent(id: ids[0]))
            #expect(String(decoding: all.body, as: UTF8.self).hasPrefix(#"{"events":["# + String(decoding: first.payload, as: UTF8.self)))

            let page = try await server.api("GET", "/v1/events?limit=2", key: key)
            #expect((page.json?["events"] as? [[String: Any]])?.map { $0["id"] as? String } == Array(ids.prefix(2)))
            let next = try #require(page.json?["next"] as? String)
            let rest = try await server.api("GET", "/v1/events?after=\(next)&limit=2", key: key)
            #expect((rest.json?["events"] as? [[String: Any]])?.map { $0["id"] as? String } == [ids[2]])
            let done = try await server.api("GET", "/v1/events?after=\(ids[2])", key: key)
            #expect(done.status == 200 && (done.json?["events"] as? [Any])?.isEmpty == true && done.json?["next"] is NSNull)
            let mine = try await server.api("GET", "/v1/events", key: other)
            #expect((mine.json?["events"] as? [[String: Any]])?.map { $0["id"] as? String } == theirs)
        }
    }

    @Test("another merchant's event as the cursor is 404 as an unknown one is, byte for byte; a malformed cursor or limit 400")
    func refusals() async throws {
        try await RouterHarness.with(secondMerchant: true) { server in
            let key = try await server.apiKey()
            let other = try await server.apiKey(for: TestMaterial.secondMerchantIdentifier)
            let theirs = try await Self.cancelled(server, key: other, count: 1, prefix: "b")
            let foreign = try await server.api("GET", "/v1/events?after=\(theirs[0])", key: key)
            let unknown = try await server.api("GET", "/v1/events?after=evt_\(String(repeating: "0", count: 32))", key: key)
            #expect(foreign.status == 404 && foreign.errorCode == "not_found")
            #expect(unknown.status == 404 && foreign.body == unknown.body)
            for query in ["after=evt_x", "after=\(theirs[0].uppercased())", "limit=0", "limit=101", "limit=ten", "limit=-1"] {
                let refused = try await server.api("GET", "/v1/events?\(query)", key: key)
                #expect(refused.status == 400 && refused.errorCode == "invalid_request", "\(query)")
            }
            #expect(try await server.send("GET", "/v1/events", host: "api.internal").status == 401)
        }
    }
}
