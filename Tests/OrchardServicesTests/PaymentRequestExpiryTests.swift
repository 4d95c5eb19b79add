import ApplePay
import Foundation
import OrchardCore
import OrchardInMemory
import OrchardTesting
import Testing

@testable import OrchardServices

/// Payment-request expiry driven directly, on the in-memory store and a clock the test moves.
@Suite("PaymentRequestExpiry: open requests past their expiry close, with their webhook; on the injected clock")
struct PaymentRequestExpiryTests {
    static let merchant = "merchant.expiry"

    let store = InMemoryStore()
    let clock = ManualClock()

    var expiry: PaymentRequestExpiry {
        PaymentRequestExpiry(store: store, interval: .milliseconds(20), time: clock.source, logger: LoopFixtures.quiet)
    }

    /// An open payment request of `merchant` (an order with its request) expiring `after` seconds from now.
    func request(_ id: String, expiringAfter seconds: TimeInterval) async throws {
        let expiresAt = clock.now.addingTimeInterval(seconds)
        var order = try TestRecords.order(id)
        order.merchantIdentifier = Self.merchant
        order.expiresAt = expiresAt
        let request = PaymentRequestRecord(
            id: id, merchantIdentifier: Self.merchant, reference: "ref-\(id)", metadata: [:],
            cart: ShopCart(currency: "EUR", countryCode: "FR", amount: 990), idempotencyKey: "key-\(id)", fingerprint: [1],
            expiresAt: expiresAt, createdAt: clock.now)
        _ = try await store.createPaymentRequest(request, order: order)
    }

    func state(_ id: String) async throws -> OrderRecord.State? { try await store.order(id: id)?.state }

    @Test("a pass expires what is past its expiry on the injected clock, and only that; each with a payment_request.expired event")
    func expiresDue() async throws {
        try await request("due", expiringAfter: -1)
        try await request("later", expiringAfter: 600)

        #expect(await expiry.expireDue() == ["due"])
        #expect(try await state("due") == .expired)
        #expect(try await state("later") == .open)
        let events = try await store.webhookEvents(merchantIdentifier: Self.merchant, state: nil, limit: 10)
        #expect(events.map(\.type) == [.paymentRequestExpired])

        clock.advance(599)
        #expect(await expiry.expireDue().isEmpty, "one second left")
        clock.advance(1)
        #expect(await expiry.expireDue() == ["later"], "due on the clock the loop was given, not the wall clock")
        #expect(try await state("later") == .expired)
        #expect(await expiry.expireDue().isEmpty, "an expired request is not expired twice")
        #expect(try await store.webhookEvents(merchantIdentifier: Self.merchant, state: nil, limit: 10).count == 2)
    }

    @Test("an order that is no longer open (paid for) is never expired")
    func onlyOpen() async throws {
        try await request("paid", expiringAfter: 60)
        var claim = TestRecords.claim("paid", transaction: "t-paid", payment: "p-paid")
        claim.draft.createdAt = clock.now
        _ = try await store.claimPayment(claim)
        clock.advance(61)
        #expect(await expiry.expireDue().isEmpty)
        #expect(try await state("paid") != .expired)
    }

    @Test("running: a request that falls due while the loop runs is expired by its next pass")
    func running() async throws {
        try await request("soon", expiringAfter: 60)
        let expiry = expiry
        try await LoopFixtures.running(expiry.run) {
            clock.advance(60)
            let expired = try await Eventually.until { try await state("soon") == .expired }
            #expect(expired)
        }
    }
}
