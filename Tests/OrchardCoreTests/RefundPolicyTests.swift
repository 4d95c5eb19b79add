import Foundation
import OrchardCore
import Testing

/// Refund eligibility, amounts and references, decided once in Core from a snapshot.
@Suite("RefundPolicy: whether, how much and under which reference a payment is refunded")
struct RefundPolicyTests {
    static let now = Date(timeIntervalSince1970: 1_800_000_000)

    static func draft(_ amount: Int64, key: String = "k1", sends: Int = 1) -> RefundRecord {
        RefundRecord(
            id: "re_new", paymentId: "p1", amount: amount, currency: "EUR", state: .pending, reference: "", idempotencyKey: key,
            sends: sends, createdAt: now, lastSentAt: now)
    }

    static func snapshot(
        _ state: PaymentState? = .settled, amount: Int64 = 1_000, earlier: RefundRecord? = nil, held: Int64 = 0, count: Int = 0
    ) -> RefundClaimSnapshot {
        RefundClaimSnapshot(
            payment: state.map { .init(state: $0, amount: amount, reference: "o1-1") }, earlier: earlier, held: held, count: count)
    }

    static func refusal(_ draft: RefundRecord, _ snapshot: RefundClaimSnapshot) -> CoreError.Code? {
        do {
            _ = try RefundPolicy.decide(draft, snapshot)
            return nil
        } catch {
            return error.code
        }
    }

    @Test("a settled payment: a new pending refund under the payment's reference and the next number")
    func new() throws {
        let decision = try RefundPolicy.decide(Self.draft(400), Self.snapshot(held: 600, count: 3))
        guard case .new(let refund) = decision else {
            Issue.record("\(decision)")
            return
        }
        #expect(refund.reference == "o1-1-r4" && refund.state == .pending && refund.sends == 1 && refund.amount == 400)
    }

    @Test("what is left bounds the refund; no arithmetic traps on hostile totals")
    func amounts() {
        #expect(Self.refusal(Self.draft(401), Self.snapshot(held: 600)) == .refundTooLarge)
        #expect(Self.refusal(Self.draft(1), Self.snapshot(held: .max)) == .refundTooLarge)
        #expect(Self.refusal(Self.draft(1), Self.snapshot(amount: .min, held: .max)) == .refundTooLarge)
        #expect(RefundPolicy.left(of: 1_000, held: 600) == 400)
        #expect(RefundPolicy.left(of: .min, held: .max) == 0)
        #expect(RefundPolicy.left(of: 10, held: 20) == 0)
    }

    @Test("only a settled payment, and an authorized one is told to cancel instead")
    func eligibility() {
        for state in PaymentState.allCases where state != .settled {
            #expect(Self.refusal(Self.draft(1), Self.snapshot(state)) == .invalidState, "\(state)")
        }
        #expect(Self.refusal(Self.draft(1), Self.snapshot(nil)) == .invalidState)
        do {
            _ = try RefundPolicy.decide(Self.draft(1), Self.snapshot(.authorized))
            Issue.record("an authorized payment was refunded")
        } catch {
            #expect(error.message.hasSuffix("cancel it instead"))
        }
    }

    @Test("a repeated key: as it is, re-sent when unknown, refused for another amount or while with the processor")
    func repeated() throws {
        var earlier = Self.draft(400)
        earlier.id = "re_old"
        earlier.reference = "o1-1-r1"
        earlier.state = .refunded
        // Answered before anything about the payment is checked: the payment moved on since.
        #expect(try RefundPolicy.decide(Self.draft(400), Self.snapshot(.cancelled, earlier: earlier)) == .existing(earlier))
        #expect(Self.refusal(Self.draft(300), Self.snapshot(earlier: earlier)) == .idempotencyMismatch)
        earlier.state = .pending
        #expect(Self.refusal(Self.draft(400), Self.snapshot(earlier: earlier)) == .paymentInProgress)
        earlier.state = .unknown
        earlier.sends = 2
        let later = Self.now.addingTimeInterval(60)
        var again = Self.draft(400, sends: 2)
        again.createdAt = later
        guard case .resend(let resent) = try RefundPolicy.decide(again, Self.snapshot(earlier: earlier)) else {
            Issue.record("not re-sent")
            return
        }
        #expect(resent.id == "re_old" && resent.state == .pending && resent.sends == 3 && resent.lastSentAt == later)
        #expect(resent.reference == "o1-1-r1", "a re-send keeps its reference")
        #expect(Self.refusal(Self.draft(400, sends: 1), Self.snapshot(earlier: earlier)) == .paymentInProgress, "sent again meanwhile")
    }
}
