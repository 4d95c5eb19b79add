import CurlClient
import Foundation
import OrchardCore
import OrchardIntegrationTesting
import OrchardServerTesting
import OrchardTesting
import Testing

/// Worldpay promises no de-duplication of a re-sent reference, so every re-send (a shopper's
/// retry, the reconciler, a retried charge or refund) first asks Worldpay's Payment Queries API
/// and payment events query, whose answers lag the send (the mock's lag, on the fixture's
/// clock): what Worldpay holds is recorded, what it does not know is re-sent only once the lag
/// has passed since the last send.
@Suite("Worldpay: asked before any re-send; not found counts only after its records' lag")
struct WorldpayQueryTests {
    static func authorizations(_ mock: MockProcessors) -> Int {
        mock.received.count { $0.method == "POST" && $0.path == "/cardPayments/customerInitiatedTransactions" }
    }

    static func queries(_ mock: MockProcessors) -> Int {
        mock.received.count { $0.method == "GET" && ($0.path.hasPrefix("/paymentQueries/") || $0.path == "/payments/events") }
    }

    static func refundCalls(_ mock: MockProcessors) -> Int {
        mock.received.count { $0.method == "POST" && $0.path.hasPrefix("/payments/settlements/refunds/") }
    }

    /// Worldpay's documented lags: Payment Queries up to 60 s, payment events up to 15 minutes.
    static func lagging(_ mock: MockProcessors) {
        mock.paymentQueriesLag = 60
        mock.paymentEventsLag = 900
    }

    @Test(
        "an authorization whose answer was lost: the retry asks, Worldpay does not show it yet, nothing is re-sent; once it does, it is recorded without a second authorization"
    )
    func lostAuthorizationFound() async throws {
        try await ProcessorFixture.with(.worldpay, admin: true) { fixture in
            Self.lagging(fixture.mock)
            fixture.mock.behaviour = .dropAfterCharge
            let (id, request) = try await fixture.order()
            #expect(try await fixture.pay(id, request).response.status == 504)
            fixture.mock.behaviour = .authorize

            let (early, _) = try await fixture.pay(id, request)
            #expect(early.status == 504)
            #expect(early.errorCode == "payment_unknown")
            #expect(Self.queries(fixture.mock) >= 2, "Payment Queries, then the payment events query")
            #expect(Self.authorizations(fixture.mock) == 1, "not found within the lag: nothing re-sent")
            #expect(try await fixture.server.store.payments(orderId: id).map(\.state) == [.unknown])

            fixture.clock.advance(61)
            let (paid, _) = try await fixture.pay(id, request)
            #expect(paid.status == 200)
            let payment = try #require(try await fixture.server.store.payments(orderId: id).first)
            #expect(payment.state == .authorized && payment.sends == 1)
            #expect(payment.links["settle"] != nil && payment.links["cancel"] != nil, "the next actions Payment Queries names")
            #expect(Self.authorizations(fixture.mock) == 1, "recorded from Worldpay's records: no second authorization")
            #expect(fixture.mock.charges.count == 1)
            let settled = try await fixture.server.send(
                "POST", "/admin/payments/\(payment.id)/settle", extraHeaders: MoreMerchants.authorization)
            #expect(settled.status == 200)
            #expect(fixture.mock.charges.first?.state == .settled)
        }
    }

    @Test("an authorization Worldpay never received: not found is waited out for 15 minutes after the last send, then re-sent exactly once")
    func notFoundThenResentOnce() async throws {
        try await ProcessorFixture.with(.worldpay) { fixture in
            Self.lagging(fixture.mock)
            fixture.mock.behaviour = .status(503)
            let (id, request) = try await fixture.order()
            #expect(try await fixture.pay(id, request).response.status == 504)
            fixture.mock.behaviour = .authorize
            for advance in [0.0, 600] {
                fixture.clock.advance(advance)
                let (waiting, _) = try await fixture.pay(id, request)
                #expect(waiting.status == 504, "not found, but within Worldpay's lag")
                #expect(Self.authorizations(fixture.mock) == 1)
            }
            fixture.clock.advance(301)
            let (paid, _) = try await fixture.pay(id, request)
            #expect(paid.status == 200)
            let payment = try #require(try await fixture.server.store.payments(orderId: id).first)
            #expect(payment.state == .authorized && payment.sends == 2 && payment.reference == "\(id)-1")
            #expect(Self.authorizations(fixture.mock) == 2, "exactly one re-send")
            #expect(fixture.mock.charges.count == 1)
        }
    }

    @Test(
        "the reconciler asks before it re-sends: a lost authorization stays unknown within the lag, then is recorded from Worldpay's records, never sent twice"
    )
    func reconcilerAsksFirst() async throws {
        try await ProcessorFixture.with(.worldpay, reconcileEverySecond: true) { fixture in
            Self.lagging(fixture.mock)
            fixture.mock.behaviour = .dropAfterCharge
            let (id, request) = try await fixture.order()
            #expect(try await fixture.pay(id, request).response.status == 504)
            fixture.mock.behaviour = .authorize
            try await poll { Self.queries(fixture.mock) >= 2 }
            #expect(try await fixture.server.store.payments(orderId: id).map(\.state) == [.unknown])
            #expect(Self.authorizations(fixture.mock) == 1)
            fixture.clock.advance(901)
            try await poll { try await fixture.server.store.payments(orderId: id).first?.state == .authorized }
            let payment = try #require(try await fixture.server.store.payments(orderId: id).first)
            #expect(payment.sends == 1 && payment.reconcileAttempts == 0, "settled by asking, not by re-sending")
            #expect(Self.authorizations(fixture.mock) == 1)
            #expect(try await fixture.server.store.order(id: id)?.state == .paid)
        }
    }

    @Test(
        "a merchant-initiated charge whose answer was lost: its retry asks first, and is recorded from Worldpay's records once they show it"
    )
    func lostMandateCharge() async throws {
        try await ProcessorFixture.with(.worldpay) { fixture in
            let key = try await fixture.server.apiKey()
            let (_, first) = try await MandatesAPITests.payRecurring(fixture.server, key: key, token: "DNITHE000000000000000001")
            let mandateId = try #require(first["mandateId"] as? String)
            Self.lagging(fixture.mock)
            fixture.mock.behaviour = .dropAfterCharge
            let charge = #"{"amount": 990, "reference": "inv-2"}"#
            let path = "/v1/mandates/\(mandateId)/charges"
            #expect(try await fixture.server.api("POST", path, key: key, json: charge, idempotencyKey: "c1").status == 504)
            fixture.mock.behaviour = .authorize
            let waiting = try await fixture.server.api("POST", path, key: key, json: charge, idempotencyKey: "c1")
            #expect(waiting.status == 504)
            #expect(fixture.mock.mitCharges.count == 1)
            #expect(fixture.mock.received.count { $0.path == "/cardPayments/merchantInitiatedTransactions" } == 1)
            fixture.clock.advance(61)
            let paid = try await fixture.server.api("POST", path, key: key, json: charge, idempotencyKey: "c1")
            #expect(paid.status == 200)
            #expect((paid.json?["payment"] as? [String: Any])?["state"] as? String == "authorized")
            #expect(fixture.mock.received.count { $0.path == "/cardPayments/merchantInitiatedTransactions" } == 1)
        }
    }

    @Test("a partial refund whose answer was lost: the retry asks, waits out Payment Queries' lag, then records it without a second refund")
    func lostPartialRefund() async throws {
        try await ProcessorFixture.with(.worldpay, admin: true) { fixture in
            let settled = try await SettledPayment.make(fixture)
            let key = try await fixture.server.apiKey()
            Self.lagging(fixture.mock)
            fixture.mock.refundBehaviour = .dropAfterRefund
            let path = "/v1/payments/\(settled.payment.id)/refunds"
            let first = try await fixture.server.api("POST", path, key: key, json: #"{"amount": 400}"#, idempotencyKey: "r-1")
            #expect(first.status == 202)
            fixture.mock.refundBehaviour = .accept
            let again = try await fixture.server.api("POST", path, key: key, json: #"{"amount": 400}"#, idempotencyKey: "r-1")
            #expect(again.json?["state"] as? String == "unknown")
            #expect(Self.refundCalls(fixture.mock) == 1, "not found within the lag: nothing re-sent")
            fixture.clock.advance(61)
            let done = try await fixture.server.api("POST", path, key: key, json: #"{"amount": 400}"#, idempotencyKey: "r-1")
            #expect(done.status == 201)
            #expect(done.json?["state"] as? String == "refunded")
            #expect(Self.refundCalls(fixture.mock) == 1)
            #expect(settled.refunded == [400], "refunded once")
            let refund = try #require(try await fixture.server.store.refunds(paymentId: settled.payment.id).first)
            #expect(refund.sends == 1 && refund.processorReference == fixture.mock.refunds.first?.id)
        }
    }

    @Test("a partial refund Worldpay never received: re-sent exactly once, after Payment Queries' lag")
    func refundNotFoundThenResent() async throws {
        try await ProcessorFixture.with(.worldpay, admin: true) { fixture in
            let settled = try await SettledPayment.make(fixture)
            let key = try await fixture.server.apiKey()
            Self.lagging(fixture.mock)
            fixture.mock.refundBehaviour = .status(503)
            let path = "/v1/payments/\(settled.payment.id)/refunds"
            #expect(try await fixture.server.api("POST", path, key: key, json: #"{"amount": 300}"#, idempotencyKey: "r-2").status == 202)
            fixture.mock.refundBehaviour = .accept
            let waiting = try await fixture.server.api("POST", path, key: key, json: #"{"amount": 300}"#, idempotencyKey: "r-2")
            #expect(waiting.json?["state"] as? String == "unknown")
            #expect(Self.refundCalls(fixture.mock) == 1)
            fixture.clock.advance(61)
            let done = try await fixture.server.api("POST", path, key: key, json: #"{"amount": 300}"#, idempotencyKey: "r-2")
            #expect(done.json?["state"] as? String == "refunded")
            #expect(Self.refundCalls(fixture.mock) == 2, "exactly one re-send")
            #expect(settled.refunded == [300])
        }
    }
}
