import CurlClient
import Foundation
import OrchardCore
import OrchardIntegrationTesting
import OrchardServerTesting
import OrchardTesting
import Testing

/// Worldline's status model on the money path: only an authorization that holds funds is paid;
/// a pending or redirect status leaves the payment unknown with Worldline's payment ID, and
/// GetPayment (or GetRefunds) settles it later, never a second CreatePayment.
@Suite("Worldline Direct statuses: only funds held are paid; pending ones are asked about, never re-sent")
struct WorldlineStatusTests {
    static let pending: [MockWorldlineStatus] = [.redirected, .pendingPayment, .authorizationRequested]

    /// How many CreatePayment calls (shopper-present and merchant-initiated) reached the mock.
    static func creates(_ mock: MockProcessors) -> Int {
        mock.received.count { $0.method == "POST" && $0.path == "/v2/\(ProcessorFixture.worldline.merchantId)/payments" }
    }

    static func getPayments(_ mock: MockProcessors) -> Int {
        mock.received.count { $0.method == "GET" && $0.path.hasPrefix("/v2/\(ProcessorFixture.worldline.merchantId)/payments/") }
    }

    @Test(
        "a pending or redirect status is not paid: unknown, Worldline's payment ID kept; the shopper's retry asks GetPayment and is paid once it holds funds, with one CreatePayment",
        arguments: pending)
    func pendingThenAuthorized(status: MockWorldlineStatus) async throws {
        try await ProcessorFixture.with(.worldlineEncrypted, admin: true) { fixture in
            fixture.mock.behaviour = .worldlineStatus(status)
            let (id, request) = try await fixture.order()
            let (first, _) = try await fixture.pay(id, request)
            #expect(first.status == 504)
            #expect(first.errorCode == "payment_unknown")
            let charge = try #require(fixture.mock.charges.first)
            #expect(charge.state == .pending)
            let unknown = try #require(try await fixture.server.store.payments(orderId: id).first)
            #expect(unknown.state == .unknown)
            #expect(unknown.processorReference == charge.id, "Worldline's payment ID is kept for GetPayment")
            #expect(unknown.processorCode == status.rawValue)
            #expect(try await fixture.server.store.order(id: id)?.state == .unknown)

            // Still pending at Worldline: the retry asks, and sends nothing.
            let (early, _) = try await fixture.pay(id, request)
            #expect(early.status == 504)
            #expect(early.errorCode == "payment_unknown")
            #expect(Self.getPayments(fixture.mock) == 1)
            #expect(try await fixture.server.store.payments(orderId: id).map(\.state) == [.unknown])

            fixture.mock.setWorldlineStatus(.pendingCapture, ofPayment: charge.id)
            let (paid, _) = try await fixture.pay(id, request)
            #expect(paid.status == 200)
            #expect(paid.json?["paymentId"] as? String == unknown.id)
            let payment = try #require(try await fixture.server.store.payment(id: unknown.id))
            #expect(payment.state == .authorized && payment.sends == 1)
            #expect(payment.links["settle"]?.hasSuffix("/payments/\(charge.id)/capture") == true)
            #expect(try await fixture.server.store.order(id: id)?.state == .paid)
            #expect(Self.creates(fixture.mock) == 1, "never a second CreatePayment")
            #expect(fixture.mock.charges.count == 1)
            let settled = try await fixture.server.send(
                "POST", "/admin/payments/\(unknown.id)/settle", extraHeaders: MoreMerchants.authorization)
            #expect(settled.status == 200)
            #expect(fixture.mock.charges.first?.state == .settled)
        }
    }

    @Test(
        "the reconciler settles a pending payment from GetPayment: refused when Worldline rejects it, never re-sent",
        arguments: pending)
    func pendingThenRejectedByReconciler(status: MockWorldlineStatus) async throws {
        try await ProcessorFixture.with(.worldlineDecrypted, reconcileEverySecond: true) { fixture in
            fixture.mock.behaviour = .worldlineStatus(status)
            let (id, request) = try await fixture.order()
            #expect(try await fixture.pay(id, request).response.status == 504)
            let charge = try #require(fixture.mock.charges.first)
            // The reconciler asks while Worldline still has it pending, and sends nothing.
            try await poll { Self.getPayments(fixture.mock) >= 1 }
            #expect(try await fixture.server.store.payments(orderId: id).map(\.state) == [.unknown])
            fixture.mock.setWorldlineStatus(.rejected, ofPayment: charge.id)
            try await poll { try await fixture.server.store.payments(orderId: id).first?.state == .refused }
            #expect(try await fixture.server.store.order(id: id)?.state == .open, "nothing held: the order takes another card")
            #expect(Self.creates(fixture.mock) == 1)
        }
    }

    @Test("CANCELLED is refused: failure, nothing charged, the order open; another card then pays under a new reference")
    func cancelledIsRefused() async throws {
        try await ProcessorFixture.with(.worldlineEncrypted) { fixture in
            fixture.mock.behaviour = .worldlineStatus(.cancelled)
            let (id, request) = try await fixture.order()
            let (response, _) = try await fixture.pay(id, request)
            #expect(response.status == 402)
            #expect(response.json?["status"] as? String == "failure")
            let refused = try #require(try await fixture.server.store.payments(orderId: id).first)
            #expect(refused.state == .refused && refused.processorCode == "CANCELLED")
            #expect(try await fixture.server.store.order(id: id)?.state == .open)
            fixture.mock.behaviour = .authorize
            #expect(try await fixture.pay(id, request).response.status == 200)
            #expect(try await fixture.server.store.payments(orderId: id).map(\.reference) == ["\(id)-1", "\(id)-2"])
        }
    }

    @Test(
        "a merchant-initiated charge answered AUTHORIZATION_REQUESTED is unknown; its retry asks GetPayment, and is paid once, with one charge"
    )
    func pendingMandateCharge() async throws {
        try await ProcessorFixture.with(.worldlineEncrypted) { fixture in
            let key = try await fixture.server.apiKey()
            let (_, first) = try await MandatesAPITests.payRecurring(fixture.server, key: key, token: "DNITHE000000000000000001")
            let mandateId = try #require(first["mandateId"] as? String)
            fixture.mock.behaviour = .worldlineStatus(.authorizationRequested)
            let charge = #"{"amount": 990, "reference": "inv-2"}"#
            let path = "/v1/mandates/\(mandateId)/charges"
            let unknown = try await fixture.server.api("POST", path, key: key, json: charge, idempotencyKey: "c1")
            #expect(unknown.status == 504)
            #expect(unknown.errorCode == "payment_unknown")
            let creates = Self.creates(fixture.mock)
            let mit = try #require(fixture.mock.mitCharges.last)
            #expect(mit.state == .pending)
            let again = try await fixture.server.api("POST", path, key: key, json: charge, idempotencyKey: "c1")
            #expect(again.status == 504, "still pending at Worldline: nothing is sent")
            fixture.mock.setWorldlineStatus(.pendingCapture, ofPayment: mit.id)
            let paid = try await fixture.server.api("POST", path, key: key, json: charge, idempotencyKey: "c1")
            #expect(paid.status == 200)
            let payment = try #require(paid.json?["payment"] as? [String: Any])
            #expect(payment["state"] as? String == "authorized" && payment["mandateId"] as? String == mandateId)
            #expect(Self.creates(fixture.mock) == creates, "the charge was sent once")
            #expect(fixture.mock.mitCharges.count == 1)
        }
    }

    @Test("a refund Worldline has not taken yet is unknown; the shop's retry asks GetRefunds and records REFUNDED, with one refund call")
    func pendingRefund() async throws {
        try await ProcessorFixture.with(.worldlineEncrypted, admin: true) { fixture in
            let settled = try await SettledPayment.make(fixture)
            let key = try await fixture.server.apiKey()
            fixture.mock.refundBehaviour = .worldlineStatus("PENDING_APPROVAL")
            let path = "/v1/payments/\(settled.payment.id)/refunds"
            let first = try await fixture.server.api("POST", path, key: key, json: #"{"amount": 400}"#, idempotencyKey: "r-1")
            #expect(first.status == 202)
            #expect(first.json?["state"] as? String == "unknown")
            let made = try #require(fixture.mock.refunds.first)
            let again = try await fixture.server.api("POST", path, key: key, json: #"{"amount": 400}"#, idempotencyKey: "r-1")
            #expect(again.json?["state"] as? String == "unknown", "still waiting at Worldline: nothing is sent")
            fixture.mock.setWorldlineRefundStatus("REFUNDED", ofRefund: made.id)
            let done = try await fixture.server.api("POST", path, key: key, json: #"{"amount": 400}"#, idempotencyKey: "r-1")
            #expect(done.json?["state"] as? String == "refunded")
            let refund = try #require(try await fixture.server.store.refunds(paymentId: settled.payment.id).first)
            #expect(refund.state == .refunded && refund.sends == 1 && refund.processorReference == made.id)
            #expect(fixture.mock.received.count { $0.method == "POST" && $0.path.hasSuffix("/refund") } == 1)
            #expect(settled.refunded == [400])
        }
    }
}

/// Waits until `condition` holds; records an issue if it never does.
func poll(_ condition: () async throws -> Bool) async throws {
    #expect(try await Eventually.until(condition), "the condition never held")
}
