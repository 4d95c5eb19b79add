import Foundation
import OrchardCore
import Testing

/// The one rule every re-send follows (``PaymentsEngine/Policy/resendDecision(_:firstSentAt:lastSentAt:now:)``),
/// on its own: what each answer of a processor's records leads to, and when.
@Suite("Asking before re-sending: the rule")
struct ResendPolicyTests {
    let policy = PaymentsEngine.Policy(firstReconcileDelay: 30, maximumReconcileDelay: 3600)
    let first = Date(timeIntervalSince1970: 1_800_000_000)
    var last: Date { first.addingTimeInterval(100) }

    func decide(_ lookup: PaymentLookup?, at seconds: TimeInterval) -> ResendDecision<AuthorizationOutcome> {
        policy.resendDecision(lookup, firstSentAt: first, lastSentAt: last, now: last.addingTimeInterval(seconds))
    }

    @Test("an outcome in the processor's records is recorded, whatever the time")
    func found() {
        let outcome = AuthorizationOutcome(status: .authorized, processorReference: "psp-1")
        #expect(decide(.found(outcome), at: 0) == .settle(outcome))
        #expect(decide(.found(outcome), at: 86_400) == .settle(outcome))
    }

    @Test("not found counts only once the processor's lag has passed since the last send")
    func notFound() {
        guard case .wait(let until, _) = decide(.notFound(lag: 900), at: 0) else {
            Issue.record("not found within the lag must wait")
            return
        }
        #expect(until == last.addingTimeInterval(900), "asked again when the lag has passed")
        if case .resend = decide(.notFound(lag: 900), at: 899) { Issue.record("re-sent within the lag") }
        #expect(decide(.notFound(lag: 900), at: 900) == .resend)
        #expect(decide(.notFound(lag: 60), at: 61) == .resend)
    }

    @Test(
        "held without an outcome, or not asked: wait, asking again after as long again as it has been unknown, within the reconcile delays")
    func pendingWaits() {
        for lookup in [PaymentLookup.pending, nil] {
            // 100 s after the first send, asked at once: as long again.
            guard case .wait(let soon, _) = decide(lookup, at: 0) else {
                Issue.record("\(String(describing: lookup)) must wait")
                continue
            }
            #expect(soon == last.addingTimeInterval(100))
            guard case .wait(let capped, _) = decide(lookup, at: 86_400) else { continue }
            #expect(capped == last.addingTimeInterval(86_400 + 3600), "never longer than the longest reconcile delay")
        }
        let fresh = policy.resendDecision(PaymentLookup.pending, firstSentAt: first, lastSentAt: first, now: first)
        #expect(fresh == .wait(until: first.addingTimeInterval(30), reason: "the processor has it without a final outcome yet"))
    }

    @Test("a processor that de-duplicates re-sends: re-sent within its window from the first send, then an operator's")
    func deduplicated() {
        #expect(decide(.deduplicated(window: nil), at: 10 * 86_400) == .resend)
        #expect(decide(.deduplicated(window: 23 * 3600), at: 0) == .resend)
        let late = decide(.deduplicated(window: 23 * 3600), at: 23 * 3600)
        guard case .needsOperator = late else {
            Issue.record("past the window: \(late)")
            return
        }
    }

    @Test("a processor's nonsense durations are bounded on the safe side, without trapping")
    func bounded() {
        guard case .wait(let until, _) = decide(.notFound(lag: .nan), at: 0) else {
            Issue.record("a lag that is not a number must wait")
            return
        }
        #expect(until == last.addingTimeInterval(2_592_000))
        if case .resend = decide(.notFound(lag: .infinity), at: 86_400) { Issue.record("an infinite lag never passes in a day") }
        #expect(decide(.notFound(lag: -5), at: 0) == .resend, "a negative lag is none")
        if case .resend = decide(.deduplicated(window: .nan), at: 0) { Issue.record("a window that is not a number is none") }
    }
}
