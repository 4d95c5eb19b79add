import ApplePay
import CurlClient
import Foundation
import OrchardConfiguration
import OrchardCore
import OrchardIntegrationTesting
import OrchardServer
import OrchardServerTesting
import OrchardServices
import OrchardTesting
import Testing

/// Apple's merchant token notifications over real HTTP, against the mock gateway: each is
/// recorded in the token-event inbox and answered at once, and its event is fetched in the
/// background, so a flood of made-up IDs costs Apple nothing and keeps no genuine UNLINK out.
/// (These scenarios build against a commit without the inbox too, with the Support file
/// stubbed, and fail there.)
@Suite("Token-event inbox: Apple's notifications recorded at once, fetched in the background")
struct TokenEventInboxTests {
    static let merchant = TestMaterial.merchantIdentifier

    /// The payments-API server, its token-event inbox polled every 100 ms; live, since Apple's
    /// notifications come from the mock gateway over a socket.
    static func with(
        perClientIP: Int? = nil, perMerchant: Int? = nil, platform: Bool = false, _ body: (ServerHarness) async throws -> Void
    ) async throws {
        try await ServerHarness.with(
            otherMockMerchants: MoreMerchants.mockMerchants, environment: MoreMerchants.environment,
            callsShops: true, transport: .live,
            configure: { file, directory in
                if platform {
                    try MoreMerchants.all(&file, directory)
                } else {
                    try MoreMerchants.addSecondMerchant(&file, directory)
                }
                TokenEventInboxSupport.configure(&file, perClientIP: perClientIP, perMerchant: perMerchant)
            }, body)
    }

    static func notificationURL(_ server: ServerHarness, merchant: String = merchant) -> String {
        "http://127.0.0.1:\(server.port)/apple-pay/token-events/\(merchant)"
    }

    /// A notification as Apple sends it, from `address` behind the loopback proxy.
    static func notify(_ server: ServerHarness, eventId: String, from address: String) async throws -> (status: Int, retryAfter: String?) {
        let response = try await server.send(
            "GET", "/apple-pay/token-events/\(merchant)/notification/merchantToken/\(eventId)",
            extraHeaders: [(name: "X-Forwarded-For", value: address)])
        return (response.status, response.header("retry-after"))
    }

    /// A recurring payment with `token`, and its mandate's ID.
    static func mandate(_ server: ServerHarness, token: String) async throws -> String {
        let key = try await server.apiKey()
        let (_, payment) = try await MandatesAPITests.payRecurring(server, key: key, token: token)
        return try #require(payment["mandateId"] as? String)
    }

    @Test(
        "hundreds of made-up event IDs from one address, then Apple's UNLINK from another: 200 at once, the mandate ends, and the flood got only its probation's fetches"
    )
    func flood() async throws {
        try await Self.with { server in
            let mandateId = try await Self.mandate(server, token: "DNITHE000000000000000021")
            let started = ContinuousClock.now
            var statuses: [Int] = []
            for batch in 0..<6 {
                try await withThrowingTaskGroup(of: Int.self) { group in
                    for index in 0..<50 {
                        group.addTask {
                            try await Self.notify(server, eventId: "made-up-\(batch)-\(index)", from: "203.0.113.7").status
                        }
                    }
                    for try await status in group { statuses.append(status) }
                }
            }
            #expect(statuses.count == 300 && statuses.allSatisfy { $0 == 200 || $0 == 429 }, "\(Set(statuses))")

            let unlinkId = server.gateway.addTokenEvent(
                eventType: "UNLINK", merchantTokenIdentifier: "DNITHE000000000000000021", reason: "user")
            #expect(try await server.gateway.notify(tokenNotificationURL: Self.notificationURL(server), eventId: unlinkId) == 200)
            #expect(server.gateway.tokenNotifications.map(\.status) == [200], "no retry needed")
            let ended = try await Eventually.until { try await server.store.mandate(id: mandateId)?.state == .ended }
            #expect(ended, "Apple's UNLINK was applied within the inbox's normal delay")
            #expect(try await server.store.mandate(id: mandateId)?.endedReason == "apple:user")

            // Ten more events from Apple's address, each fetched in a pass of its own: passes in
            // which the flood's address had a due item too, and would have had it fetched had its
            // made-up IDs drawn on the merchant's budget.
            var later: [String] = []
            for _ in 0..<10 {
                let eventId = server.gateway.addTokenEvent(
                    eventType: "UPDATED_METADATA", merchantTokenIdentifier: "DNITHE000000000000000021")
                #expect(try await server.gateway.notify(tokenNotificationURL: Self.notificationURL(server), eventId: eventId) == 200)
                later.append(eventId)
            }
            let fetched = try await Eventually.until { Set(later).isSubset(of: server.gateway.tokenEventFetches) }
            #expect(fetched, "Apple's later events were fetched")

            let elapsed = started.duration(to: .now)
            let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
            let madeUp = server.gateway.tokenEventFetches.filter { $0.hasPrefix("made-up-") }.count
            let allowance = TokenEventInboxSupport.probationAllowance(seconds: seconds)
            #expect(madeUp <= allowance, "\(madeUp) made-up IDs asked of Apple in \(seconds) s; probation allows \(allowance)")
            #expect(server.gateway.tokenEventFetches.filter { $0 == unlinkId }.count == 1)
        }
    }

    @Test("Apple unreachable when the notification comes: 200 all the same, the event fetched once Apple is back, the mandate ended")
    func appleUnreachable() async throws {
        try await Self.with { server in
            let mandateId = try await Self.mandate(server, token: "DNITHE000000000000000022")
            let unlinkId = server.gateway.addTokenEvent(
                eventType: "UNLINK", merchantTokenIdentifier: "DNITHE000000000000000022", reason: "issuer")
            await TokenEventInboxSupport.setUnreachable(server.gateway, true)
            #expect(try await server.gateway.notify(tokenNotificationURL: Self.notificationURL(server), eventId: unlinkId) == 200)
            // Orchard tried while Apple was down, and keeps the event for later.
            let tried = try await Eventually.until {
                try await TokenEventInboxSupport.failedAttempts(server.store, merchant: Self.merchant, eventId: unlinkId) ?? 0 >= 1
            }
            #expect(tried)
            #expect(try await server.store.mandate(id: mandateId)?.state == .active)

            await TokenEventInboxSupport.setUnreachable(server.gateway, false)
            let ended = try await Eventually.until { try await server.store.mandate(id: mandateId)?.state == .ended }
            #expect(ended, "fetched once Apple was back")
            #expect(try await server.store.mandate(id: mandateId)?.endedReason == "apple:issuer")
            #expect(server.gateway.tokenEventFetches == [unlinkId])
        }
    }

    @Test("the same event notified twice (while pending and once applied) is fetched once")
    func notifiedTwice() async throws {
        try await Self.with { server in
            let token = "DNITHE000000000000000023"
            let mandateId = try await Self.mandate(server, token: token)
            let art = DecryptedPayment.MerchantTokenMetadata(
                cardArt: [.init(name: "new", type: "image/png", url: "https://art.example/new.png")],
                cardMetadata: .init(cardCountry: "FR", expirationDate: "20320131", fpanSuffix: "0005"))
            let updateId = server.gateway.addTokenEvent(eventType: "UPDATED_CARD_ART", merchantTokenIdentifier: token, metadata: art)
            let url = Self.notificationURL(server)
            async let first = server.gateway.notify(tokenNotificationURL: url, eventId: updateId)
            async let second = server.gateway.notify(tokenNotificationURL: url, eventId: updateId)
            #expect(try await [first, second] == [200, 200])
            let updated = try await Eventually.until {
                try await server.store.mandate(id: mandateId)?.merchantTokenMetadata == art
            }
            #expect(updated)
            #expect(try await server.gateway.notify(tokenNotificationURL: url, eventId: updateId) == 200, "Apple's retry of it")

            // A later event from the same sender is fetched after anything it sent before.
            let unlinkId = server.gateway.addTokenEvent(eventType: "UNLINK", merchantTokenIdentifier: token)
            #expect(try await server.gateway.notify(tokenNotificationURL: url, eventId: unlinkId) == 200)
            let ended = try await Eventually.until { try await server.store.mandate(id: mandateId)?.state == .ended }
            #expect(ended)
            #expect(server.gateway.tokenEventFetches.filter { $0 == updateId }.count == 1)
            let kinds = try await server.store.webhookEvents(merchantIdentifier: Self.merchant, state: nil, limit: 10).map(\.type)
            #expect(kinds.filter { $0 == .mandateUpdated }.count == 1, "one mandate.updated for one event")
        }
    }

    @Test("a percent-encoded partner ID in the notification's path reaches the registered merchant")
    func percentEncodedPartner() async throws {
        try await Self.with(platform: true) { server in
            let partner = "tea-house|eu&co$"
            let registered = try await server.send(
                "POST", "/admin/merchants",
                body: Array(
                    #"{"partnerInternalMerchantIdentifier": "\#(partner)", "partnerMerchantName": "Tea House", "domainNames": ["tea-house.example"]}"#
                        .utf8), extraHeaders: MoreMerchants.authorization)
            #expect(registered.status == 201, "\(String(decoding: registered.body, as: UTF8.self))")
            let encoded = try #require(partner.addingPercentEncoding(withAllowedCharacters: .alphanumerics))
            let eventId = server.gateway.addTokenEvent(eventType: "UPDATED_METADATA", merchantTokenIdentifier: "DNITHE000000000000000024")
            #expect(
                try await server.gateway.notify(tokenNotificationURL: Self.notificationURL(server, merchant: encoded), eventId: eventId)
                    == 200)
            let fetched = try await Eventually.until {
                server.gateway.receivedMerchantTokenCalls.contains { $0.path.hasSuffix("/event/\(eventId)") && $0.status == 200 }
            }
            #expect(fetched, "asked of Apple for the partner, under the platform's identity")
            let call = try #require(server.gateway.receivedMerchantTokenCalls.first { $0.path.hasSuffix("/event/\(eventId)") })
            let segment = call.path.dropFirst("/paymentservices/v1/merchantId/".count).prefix { $0 != "/" }
            #expect(segment.removingPercentEncoding == partner)
        }
    }

    @Test(
        "an address Apple vouched for passes a merchant's spent notification bucket and may have more than 20 waiting; a new address may not"
    )
    func trustedSource() async throws {
        try await Self.with(perClientIP: 1000, perMerchant: 3) { server in
            let token = "DNITHE000000000000000026"
            let mandateId = try await Self.mandate(server, token: token)
            let url = Self.notificationURL(server)
            let first = server.gateway.addTokenEvent(eventType: "UPDATED_METADATA", merchantTokenIdentifier: token)
            #expect(try await server.gateway.notify(tokenNotificationURL: url, eventId: first) == 200)
            #expect(try await Eventually.until { server.gateway.tokenEventFetches.contains(first) })
            // Wait for the outcome to be written: the address is trusted from then on.
            #expect(
                try await Eventually.until {
                    try await TokenEventInboxSupport.isApplied(server.store, merchant: Self.merchant, eventId: first)
                })

            // Other addresses spend the merchant's bucket (3, less Apple's one).
            let spent = try await [
                Self.notify(server, eventId: "x1", from: "203.0.113.1"), Self.notify(server, eventId: "x2", from: "203.0.113.2"),
            ]
            #expect(spent.map(\.status) == [200, 200])
            #expect(try await Self.notify(server, eventId: "x3", from: "203.0.113.3").status == 429, "a new address is refused")
            let unlinkId = server.gateway.addTokenEvent(eventType: "UNLINK", merchantTokenIdentifier: token, reason: "user")
            #expect(try await server.gateway.notify(tokenNotificationURL: url, eventId: unlinkId) == 200, "Apple's address is let through")
            #expect(try await Eventually.until { try await server.store.mandate(id: mandateId)?.state == .ended })

            // Apple failing: its notifications wait, more than an untrusted address may have waiting.
            server.gateway.merchantTokenFaultStatus = 503
            for _ in 0..<(TokenEventInboxSupport.policy.maxPendingPerSource + 5) {
                let eventId = server.gateway.addTokenEvent(eventType: "UPDATED_METADATA", merchantTokenIdentifier: token)
                #expect(
                    try await server.send("GET", "/apple-pay/token-events/\(Self.merchant)/notification/merchantToken/\(eventId)").status
                        == 200)
            }
        }
    }

    @Test("an address with 20 notifications waiting gets 429 with Retry-After for the next, and nothing is recorded")
    func pendingCap() async throws {
        try await Self.with(perClientIP: 1000, perMerchant: 1000) { server in
            let started = ContinuousClock.now
            var accepted = 0
            var refused: [String?] = []
            var refusedIds: [String] = []
            for index in 0..<40 {
                let answer = try await Self.notify(server, eventId: "made-up-\(index)", from: "203.0.113.7")
                if answer.status == 200 { accepted += 1 } else if answer.status == 429 { refused.append(answer.retryAfter) }
                if answer.status == 429 { refusedIds.append("made-up-\(index)") }
            }
            let elapsed = started.duration(to: .now)
            // Each made-up ID Apple has answered for meanwhile frees a place; probation bounds those.
            let finished = TokenEventInboxSupport.probationAllowance(seconds: Double(elapsed.components.seconds) + 1)
            #expect(accepted >= 20 && accepted <= 20 + finished, "\(accepted) recorded")
            #expect(accepted + refused.count == 40 && refused.allSatisfy { $0 == "60" })
            // Which ones were refused depends on when Apple's answers freed places (a loaded machine
            // frees some late in the run): none of those refused is recorded.
            #expect(!refusedIds.isEmpty)
            for refusedId in refusedIds {
                #expect(try await TokenEventInboxSupport.failedAttempts(server.store, merchant: Self.merchant, eventId: refusedId) == nil)
            }
        }
    }

    @Test("an address past its rate of notifications gets 429 with Retry-After, and that notification is not recorded")
    func rateLimited() async throws {
        try await Self.with(perClientIP: 5) { server in
            for index in 0..<5 {
                #expect(try await Self.notify(server, eventId: "made-up-\(index)", from: "198.51.100.9").status == 200)
            }
            let eventId = server.gateway.addTokenEvent(eventType: "UPDATED_METADATA", merchantTokenIdentifier: "DNITHE000000000000000025")
            let refused = try await Self.notify(server, eventId: eventId, from: "198.51.100.9")
            #expect(refused.status == 429)
            #expect((refused.retryAfter.flatMap { Int($0) } ?? 0) >= 1, "Retry-After: \(refused.retryAfter ?? "none")")
            #expect(try await TokenEventInboxSupport.failedAttempts(server.store, merchant: Self.merchant, eventId: eventId) == nil)
            #expect(
                try await Self.notify(server, eventId: eventId, from: "198.51.100.10").status == 200, "another address is not held back")
        }
    }
}
