import ApplePay
import Foundation
import OrchardCore
import Testing

/// The claim's rules, decided once in Core from a snapshot: each row of the decision table.
@Suite("PaymentClaimPolicy: whether and how a token is claimed for an order")
struct PaymentClaimPolicyTests {
    static let now = Date(timeIntervalSince1970: 1_800_000_000)

    static func claim(version: Int = 3, resending: String? = nil, expectedSends: Int? = nil) -> PaymentClaim {
        PaymentClaim(
            draft: PaymentRecord(
                id: "p-new", orderId: "o1", transactionId: "t1", state: .pending, amount: 990, currency: "EUR", network: "visa",
                lastFour: "1111", processor: "record", reference: "", createdAt: now),
            transactionId: "t1", sealedRequest: [1], priceVersion: version, expectedSends: expectedSends, resending: resending)
    }

    static func snapshot(
        _ state: OrderRecord.State?, version: Int = 3, expiresAt: Date? = nil, used: Bool = false,
        unknown: PaymentClaimSnapshot.UnknownAttempt? = nil, attempts: Int = 0
    ) -> PaymentClaimSnapshot {
        PaymentClaimSnapshot(
            order: state.map { .init(state: $0, priceVersion: version, expiresAt: expiresAt) }, transactionUsed: used,
            unknownAttempt: unknown, attempts: attempts)
    }

    static func refusal(_ claim: PaymentClaim, _ snapshot: PaymentClaimSnapshot) -> CoreError.Code? {
        do {
            _ = try PaymentClaimPolicy.decide(claim, snapshot)
            return nil
        } catch {
            return error.code
        }
    }

    @Test("an open order at the token's price: a first send under the next reference, moving open → pending")
    func firstSend() throws {
        let decision = try PaymentClaimPolicy.decide(Self.claim(), Self.snapshot(.open, attempts: 2))
        guard case .first(let record) = decision.attempt else {
            Issue.record("\(decision)")
            return
        }
        #expect(record.reference == "o1-3" && record.state == .pending && record.id == "p-new")
        #expect(decision.move == PaymentLifecycle.move(.firstSend) && decision.priceVersion == 3 && decision.paymentId == "p-new")
    }

    @Test("an unknown order: its unknown attempt re-sent, if the claim names it and saw it as often sent")
    func resend() throws {
        let unknown = PaymentClaimSnapshot.UnknownAttempt(id: "p-old", sends: 2)
        let decision = try PaymentClaimPolicy.decide(
            Self.claim(resending: "p-old", expectedSends: 2), Self.snapshot(.unknown, unknown: unknown, attempts: 1))
        #expect(decision.attempt == .resend(paymentId: "p-old", sends: 2) && decision.move == PaymentLifecycle.move(.resend))
        #expect(decision.paymentId == "p-old")
        #expect(
            Self.refusal(Self.claim(resending: "p-old", expectedSends: 1), Self.snapshot(.unknown, unknown: unknown)) == .paymentInProgress,
            "sent again meanwhile")
        #expect(
            Self.refusal(Self.claim(), Self.snapshot(.unknown, unknown: unknown)) == .paymentInProgress, "a new attempt finds it unknown")
        #expect(Self.refusal(Self.claim(resending: "p-other"), Self.snapshot(.unknown, unknown: unknown)) == .paymentInProgress)
        #expect(Self.refusal(Self.claim(resending: "p-old"), Self.snapshot(.unknown)) == .orderNotOpen, "no unknown attempt")
        #expect(Self.refusal(Self.claim(resending: "p-old"), Self.snapshot(.open)) == .paymentInProgress, "a re-send finds it open")
    }

    @Test("the price is part of the claim: any other version is orderChanged, for a first send and a re-send")
    func priceVersion() {
        #expect(Self.refusal(Self.claim(version: 2), Self.snapshot(.open, version: 3)) == .orderChanged)
        #expect(Self.refusal(Self.claim(version: 4), Self.snapshot(.open, version: 3)) == .orderChanged)
        let unknown = PaymentClaimSnapshot.UnknownAttempt(id: "p-old", sends: 1)
        #expect(
            Self.refusal(Self.claim(version: 2, resending: "p-old"), Self.snapshot(.unknown, version: 3, unknown: unknown)) == .orderChanged
        )
    }

    @Test("refusals: a replay first, whatever the order; then pending, closed, missing and expired orders")
    func refusals() {
        #expect(Self.refusal(Self.claim(), Self.snapshot(.paid, used: true)) == .replayedPayment)
        #expect(Self.refusal(Self.claim(), Self.snapshot(nil, used: true)) == .replayedPayment)
        #expect(Self.refusal(Self.claim(), Self.snapshot(.pending)) == .paymentInProgress)
        for state in [OrderRecord.State.paid, .cancelled, .expired] {
            #expect(Self.refusal(Self.claim(), Self.snapshot(state)) == .orderNotOpen, "\(state)")
        }
        #expect(Self.refusal(Self.claim(), Self.snapshot(nil)) == .orderNotOpen)
        #expect(Self.refusal(Self.claim(), Self.snapshot(.open, expiresAt: Self.now)) == .orderNotOpen, "expired at the claim's time")
        #expect(Self.refusal(Self.claim(), Self.snapshot(.open, expiresAt: Self.now.addingTimeInterval(1))) == nil)
    }

    @Test("a repricing must come from the stored version, onto an open order")
    func repricing() throws {
        let priced = PricedOrder(
            currency: "EUR", lines: [], items: [], subtotal: 0, shippingMethod: nil, couponCode: nil, discount: 0, shippingCountry: nil,
            total: 0)
        let order = OrderRecord(
            id: "o1", merchantIdentifier: "m", state: .open, priced: priced, applicationData: [], createdAt: Self.now, priceVersion: 4)
        let next = order.repriced(priced)
        #expect(next.priceVersion == 5)
        try OrderPricingPolicy.checkUpdate(next, found: (.open, 4))
        let cases: [((state: OrderRecord.State?, version: Int)?, CoreError.Code)] = [
            ((.open, 5), .orderChanged), ((.open, 3), .orderChanged), ((.pending, 4), .orderNotOpen), ((.paid, 4), .orderNotOpen),
            (nil, .orderNotOpen),
        ]
        for (found, code) in cases {
            let error = #expect(throws: CoreError.self) { try OrderPricingPolicy.checkUpdate(next, found: found) }
            #expect(error?.code == code, "\(String(describing: found))")
        }
    }
}
