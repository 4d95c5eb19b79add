import Foundation
import OrchardCore
import Testing

/// What a move tells the shop, and the API-key cap: decided once in Core.
@Suite("What a payment move reports; the API-key cap")
struct ReportingPolicyTests {
    static func payment(sends: Int, reconcileAttempts: Int) -> PaymentRecord {
        PaymentRecord(
            id: "p1", orderId: "o1", transactionId: "t1", state: .unknown, amount: 990, currency: "EUR", network: nil, lastFour: "1111",
            processor: "record", reference: "o1-1", sends: sends, reconcileAttempts: reconcileAttempts,
            createdAt: Date(timeIntervalSince1970: 0))
    }

    @Test("an unknown outcome is reported once, on the first send; every other move with a webhook always")
    func unknownOnce() {
        let noAnswer = PaymentLifecycle.move(.noAnswer)
        #expect(PaymentLifecycle.reportedEvent(noAnswer, moved: Self.payment(sends: 1, reconcileAttempts: 0)) == .paymentUnknown)
        #expect(PaymentLifecycle.reportedEvent(noAnswer, moved: Self.payment(sends: 2, reconcileAttempts: 0)) == nil, "a shopper's retry")
        #expect(PaymentLifecycle.reportedEvent(noAnswer, moved: Self.payment(sends: 2, reconcileAttempts: 1)) == nil, "a re-send")
        #expect(PaymentLifecycle.reportedEvent(PaymentLifecycle.move(.stale), moved: Self.payment(sends: 3, reconcileAttempts: 2)) == nil)
        for move in PaymentLifecycle.moves where move.to != .unknown {
            #expect(PaymentLifecycle.reportedEvent(move, moved: Self.payment(sends: 5, reconcileAttempts: 4)) == move.event.webhook)
        }
        #expect(
            PaymentLifecycle.reportedEvent(PaymentLifecycle.move(.firstSend), moved: Self.payment(sends: 1, reconcileAttempts: 0)) == nil)
    }

    @Test("a merchant holds at most two active API keys")
    func keyCap() {
        let key = APIKeyRecord(id: "key_1", merchantIdentifier: "merchant.shop", secretHash: [], createdAt: Date(timeIntervalSince1970: 0))
        #expect(throws: Never.self) { try APIKeyRecord.checkCap(adding: key, active: 0) }
        #expect(throws: Never.self) { try APIKeyRecord.checkCap(adding: key, active: 1) }
        let refused = #expect(throws: CoreError.self) { try APIKeyRecord.checkCap(adding: key, active: 2) }
        #expect(refused?.code == .limitReached && refused?.message.contains("revoke one first") == true)
    }
}
