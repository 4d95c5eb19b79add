import Foundation
import OrchardCore
import OrchardTesting
import Testing

/// The token-event inbox's decisions, in memory with a hand-set clock: who is trusted, which
/// budget a fetch spends, when it waits, how long it is retried. The `tokenEvents` settings are
/// OrchardServerTests' TokenEventSettingsTests.
@Suite("Token-event policy: trust, fetch budgets and retries")
struct TokenEventPolicyTests {
    static let t0 = Date(timeIntervalSince1970: 1_800_000_000)
    static func at(_ seconds: Double) -> Date { t0.addingTimeInterval(seconds) }

    @Test("a source is trusted only while Apple's latest verdict on what it sent is a confirmed event")
    func trust() {
        let policy = TokenEventPolicy()
        #expect(!policy.isTrusted(.unknown))
        #expect(policy.isTrusted(TokenEventSourceStanding(lastConfirmed: Self.at(10))))
        #expect(!policy.isTrusted(TokenEventSourceStanding(lastRefuted: Self.at(10))))
        #expect(policy.isTrusted(TokenEventSourceStanding(lastConfirmed: Self.at(20), lastRefuted: Self.at(10))))
        #expect(
            !policy.isTrusted(TokenEventSourceStanding(lastConfirmed: Self.at(10), lastRefuted: Self.at(20))), "an ID Apple did not know")
        #expect(!policy.isTrusted(TokenEventSourceStanding(lastConfirmed: Self.at(10), lastRefuted: Self.at(10))))
        #expect(policy.maxPending(trusted: false) == 20 && policy.maxPending(trusted: true) == 10_000)
    }

    /// How many fetches `admit` grants in a row at `time`, up to `most`.
    static func granted(
        _ budgets: TokenEventBudgets, merchant: String = "m1", source: String, trusted: Bool, at time: Double, most: Int = 100
    ) -> (count: Int, allowance: TokenEventBudgets.Allowance?, waitUntil: Date?) {
        var count = 0
        var allowance: TokenEventBudgets.Allowance?
        while count < most {
            switch budgets.admit(merchant: merchant, source: source, trusted: trusted, now: Self.at(time)) {
            case .fetch(let kind):
                count += 1
                allowance = kind
            case .wait(let until):
                return (count, allowance, until)
            }
        }
        return (count, allowance, nil)
    }

    @Test("made-up IDs spend only probation: a source's own 3, six a merchant for all sources; the merchant's 20 stay for trusted sources")
    func budgets() {
        let budgets = TokenEventBudgets(policy: TokenEventPolicy())
        let flood = Self.granted(budgets, source: "203.0.113.7", trusted: false, at: 0)
        #expect(flood.count == 3 && flood.allowance == .probation)
        #expect(flood.waitUntil == Self.at(10), "6 a minute: the next in 10 s")
        #expect(Self.granted(budgets, source: "203.0.113.8", trusted: false, at: 0).count == 3)
        let third = Self.granted(budgets, source: "203.0.113.9", trusted: false, at: 0)
        #expect(third.count == 0 && third.waitUntil == Self.at(5), "the merchant's probation (12 a minute) is spent")
        #expect(
            Self.granted(budgets, merchant: "m2", source: "198.51.100.1", trusted: false, at: 0).count == 3, "another merchant's is its own"
        )

        let apple = Self.granted(budgets, source: "17.0.0.1", trusted: true, at: 0)
        #expect(apple.count == 20 && apple.allowance == .merchant, "untouched by the flood")
        #expect(apple.waitUntil == Self.at(1), "60 a minute")
        #expect(Self.granted(budgets, source: "17.0.0.1", trusted: true, at: 2).count == 2)
    }

    @Test("a refused fetch takes nothing from either budget")
    func bothOrNeither() {
        let budgets = TokenEventBudgets(policy: TokenEventPolicy())
        _ = Self.granted(budgets, source: "A", trusted: false, at: 0)
        _ = Self.granted(budgets, source: "B", trusted: false, at: 0)
        for _ in 0..<5 { #expect(Self.granted(budgets, source: "C", trusted: false, at: 0, most: 1).count == 0) }
        // 5 s on, the merchant's probation holds one token again, and C's own bucket is still full.
        #expect(Self.granted(budgets, source: "C", trusted: false, at: 5, most: 1).count == 1)
        #expect(Self.granted(budgets, source: "A", trusted: false, at: 5, most: 1).count == 0, "A's own bucket: 10 s")
    }

    @Test("buckets that have refilled are forgotten within a minute, so many sources cost no lasting memory")
    func bounded() {
        let budgets = TokenEventBudgets(policy: TokenEventPolicy())
        for index in 0..<200 { _ = budgets.admit(merchant: "m\(index)", source: "s\(index)", trusted: index % 2 == 0, now: Self.at(0)) }
        #expect(budgets.trackedBuckets == 300, "100 merchants' budgets, 100 sources' and their merchants' probation")
        _ = budgets.admit(merchant: "m0", source: "late", trusted: false, now: Self.at(61))
        #expect(budgets.trackedBuckets == 2, "only the new source's and its merchant's probation")
    }

    @Test("retries double from the first wait up to the maximum, within the window; a wait for budget is given up after it too")
    func retries() {
        var policy = TokenEventPolicy()
        #expect(policy.nextAttempt(after: 1, createdAt: Self.t0, now: Self.at(0)) == Self.at(30))
        #expect(policy.nextAttempt(after: 2, createdAt: Self.t0, now: Self.at(100)) == Self.at(160))
        #expect(policy.nextAttempt(after: 30, createdAt: Self.t0, now: Self.at(1000)) == Self.at(4600))
        #expect(policy.nextAttempt(after: 3, createdAt: Self.t0, now: Self.at(72 * 3600)) == nil, "past 72 h: failed")
        policy.retryWindow = .seconds(3600)
        #expect(!policy.givesUpWaiting(createdAt: Self.t0, now: Self.at(3600)))
        #expect(policy.givesUpWaiting(createdAt: Self.t0, now: Self.at(3601)))
        #expect(TokenEventPolicy.Rate(perMinute: 0, burst: -3) == TokenEventPolicy.Rate(perMinute: 1, burst: 1), "never a budget of none")
    }
}
