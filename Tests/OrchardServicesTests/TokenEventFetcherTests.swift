import ApplePay
import Foundation
import OrchardCore
import OrchardInMemory
import OrchardTesting
import Synchronization
import Testing

@testable import OrchardServices

/// The token-event fetcher driven directly: the in-memory inbox, a fake of Apple's merchant-token
/// API, the real mandate lifecycle and budgets, and a clock the test moves.
@Suite("TokenEventFetcher: due notifications fetched within budgets, applied, retried, given up")
struct TokenEventFetcherTests {
    static let merchant = "merchant.tokens"
    static let token = "mtok-1"

    let store = InMemoryStore()
    let apple = FakeMerchantTokens()
    let clock = ManualClock()

    func fetcher(_ policy: TokenEventPolicy = TokenEventPolicy(), merchants: [String] = [merchant]) throws -> TokenEventFetcher {
        let directory = MerchantDirectory(merchants: try merchants.map { try LoopFixtures.merchant($0) }, platform: nil)
        let lifecycle = MandateLifecycle(
            store: store, processors: PaymentProcessors(), tokens: apple, directory: directory, time: clock.source,
            logger: LoopFixtures.quiet)
        return TokenEventFetcher(
            store: store, lifecycle: lifecycle, budgets: TokenEventBudgets(policy: policy), gatewayTimeout: .seconds(10),
            time: clock.source, logger: LoopFixtures.quiet)
    }

    /// A notification of `eventId` from `source`, received `age` seconds ago and due now.
    @discardableResult
    func notified(_ eventId: String, source: String = "192.0.2.1", merchant: String = merchant, age: TimeInterval = 0) async throws
        -> TokenEventItem
    {
        var item = TokenEventItem.received(
            merchantIdentifier: merchant, eventId: eventId, source: source, at: clock.now.addingTimeInterval(-age))
        item.nextAttemptAt = clock.now
        #expect(try await store.recordTokenEvent(item, maxPendingFromSource: 1000) == .recorded)
        return item
    }

    func item(_ eventId: String, merchant: String = merchant) async throws -> TokenEventItem {
        try #require(try await store.tokenEvent(merchantIdentifier: merchant, eventId: eventId))
    }

    /// An active mandate of `merchant` on the merchant token `token`, set up by a first payment.
    func activeMandate() async throws -> String {
        var order = try TestRecords.order("o1")
        order.merchantIdentifier = Self.merchant
        try await store.insert(order)
        let claimed = try await store.claimPayment(TestRecords.claim("o1", transaction: "t1", payment: "p1"))
        let mandate = MandateRecord(
            id: "mdt_1", merchantIdentifier: Self.merchant, kind: .recurring, paymentId: claimed.id, orderId: "o1", processor: "record",
            credential: StoredCredential(reference: "cred-1", schemeReference: nil), merchantTokenIdentifier: Self.token,
            merchantTokenMetadata: nil, currency: "EUR", network: "visa", lastFour: "1111", description: "Club", createdAt: TestRecords.now)
        _ = try await store.transition(
            PaymentTransition(
                paymentId: claimed.id, orderId: "o1", move: PaymentLifecycle.move(.authorized), at: TestRecords.now,
                outcome: AuthorizationOutcome(status: .authorized, processorReference: "psp-1"), mandate: mandate))
        return mandate.id
    }

    @Test("an UNLINK fetched from Apple ends the token's mandate; the item is applied and finished")
    func unlinkApplied() async throws {
        let mandate = try await activeMandate()
        apple.answer("evt-1", .event(MerchantTokenEvent(eventType: MerchantTokenEvent.unlink, merchantTokenIdentifier: Self.token)))
        try await notified("evt-1")
        #expect(try await fetcher().fetchDue() == 1)
        let item = try await item("evt-1")
        #expect(item.state == .applied && item.attempts == 1 && item.finishedAt == clock.now)
        #expect(try await store.mandate(id: mandate)?.state == .ended)
        #expect(apple.asked.withLock { $0 } == ["evt-1 for \(Self.merchant)"])
    }

    @Test("Apple's 404 for the event marks it unknown; an invalid request, or a merchant not served here, fails it at once")
    func definiteAnswers() async throws {
        apple.answer("gone", .error(GatewayError(.rejected, "not found", appleStatus: 404)))
        apple.answer("bad", .error(GatewayError(.invalidRequest, "malformed event ID")))
        try await notified("gone")
        try await notified("bad")
        try await notified("stray", merchant: "merchant.unknown")
        _ = try await fetcher(Self.wide).fetchDue()
        #expect(try await item("gone").state == .unknown)
        #expect(try await item("bad").state == .failed)
        let stray = try await item("stray", merchant: "merchant.unknown")
        #expect(stray.state == .failed && stray.lastError?.contains("no merchant Orchard can ask Apple for") == true)
        #expect(!apple.asked.withLock { $0 }.contains { $0.hasPrefix("stray") }, "Apple is not asked for a merchant not served here")
    }

    @Test("Apple unavailable: retried after firstRetry, then twice as long; past the retry window, failed")
    func retriesThenGivesUp() async throws {
        apple.answer("evt-1", .error(GatewayError(.timedOut, "Apple did not answer in time")))
        try await notified("evt-1")
        let fetcher = try fetcher()
        _ = await fetcher.fetchDue()
        var item = try await item("evt-1")
        #expect(item.state == .pending && item.attempts == 1 && item.nextAttemptAt == clock.now.addingTimeInterval(30))
        #expect(item.lastError?.contains("Apple did not answer in time") == true)

        clock.advance(29)
        #expect(await fetcher.fetchDue() == 0, "not due yet")
        clock.advance(1)
        #expect(await fetcher.fetchDue() == 1)
        item = try await self.item("evt-1")
        #expect(item.attempts == 2 && item.nextAttemptAt == clock.now.addingTimeInterval(60))

        clock.advance(72 * 3600)
        _ = await fetcher.fetchDue()
        item = try await self.item("evt-1")
        #expect(item.state == .failed && item.attempts == 3, "the retry window (72 h) is over")
    }

    /// Several items of one source a pass, so the budgets decide.
    static let wide: TokenEventPolicy = {
        var policy = TokenEventPolicy()
        policy.perSourcePerPass = 10
        return policy
    }()

    @Test("an untrusted source's burst is fetched; the rest wait for its budget, postponed without an attempt counted")
    func probationBudget() async throws {
        for index in 0..<5 { try await notified("evt-\(index)") }
        #expect(try await fetcher(Self.wide).fetchDue() == 5)
        #expect(apple.asked.withLock { $0.count } == 3, "the probation burst of one source")
        for index in 3..<5 {
            let item = try await item("evt-\(index)")
            #expect(item.state == .pending && item.attempts == 0, "postponed, not failed")
            #expect(item.nextAttemptAt.map { $0 > clock.now } == true, "until the budget refills")
        }
    }

    @Test("a notification that waited its whole retry window for a budget is given up")
    func givesUpWaiting() async throws {
        for index in 0..<3 { try await notified("fresh-\(index)") }
        try await notified("old", age: 72 * 3600 + 1)
        _ = try await fetcher(Self.wide).fetchDue()
        let old = try await item("old")
        #expect(old.state == .failed && old.lastError?.contains("budget was spent") == true)
        #expect(!apple.asked.withLock { $0 }.contains { $0.hasPrefix("old") })
    }

    @Test("one source's backlog does not hold up another's: a pass takes perSourcePerPass of each")
    func fairAcrossSources() async throws {
        for index in 0..<4 { try await notified("flood-\(index)", source: "198.51.100.7") }
        try await notified("polite", source: "192.0.2.9")
        #expect(try await fetcher().fetchDue() == 2)
        #expect(try await item("polite").state != .pending, "fetched in the first pass")
    }

    @Test("running: a notification recorded while the loop runs is fetched and applied")
    func running() async throws {
        apple.answer("evt-live", .event(MerchantTokenEvent(eventType: MerchantTokenEvent.updatedCardArt, merchantTokenIdentifier: "x")))
        var policy = TokenEventPolicy()
        policy.pollInterval = .milliseconds(20)
        let fetcher = try fetcher(policy)
        try await LoopFixtures.running(fetcher.run) {
            try await notified("evt-live")
            let applied = try await Eventually.until { try await item("evt-live").state == .applied }
            #expect(applied)
        }
    }
}

/// Apple's merchant-token events API in memory: answers each event ID as the test says (an
/// unknown one with the event "UNLINK" of another token) and records what it was asked.
final class FakeMerchantTokens: MerchantTokenService {
    enum Answer: Sendable {
        case event(MerchantTokenEvent)
        case error(GatewayError)
    }

    let answers = Mutex<[String: Answer]>([:])
    let asked = Mutex<[String]>([])

    func answer(_ eventId: String, _ answer: Answer) { answers.withLock { $0[eventId] = answer } }

    func event(id: String, for merchant: MerchantConfiguration) async throws(GatewayError) -> MerchantTokenEvent {
        asked.withLock { $0.append("\(id) for \(merchant.merchantIdentifier)") }
        switch answers.withLock({ $0[id] })
            ?? .event(MerchantTokenEvent(eventType: MerchantTokenEvent.unlink, merchantTokenIdentifier: "other"))
        {
        case .event(let event): return event
        case .error(let error): throw error
        }
    }

    func unlink(merchantTokenIdentifier: String, for merchant: MerchantConfiguration) async throws(GatewayError) {}

    // Usage information is not these tests' subject: Apple is unreachable for it.
    func publicKey(merchantTokenIdentifier: String, for merchant: MerchantConfiguration) async throws(GatewayError)
        -> MerchantTokenKeyAnswer
    { throw GatewayError(.unreachable, "not in this test") }

    func updateMerchantMetadata(merchantTokenIdentifier: String, tokenNotificationURL: String, for merchant: MerchantConfiguration)
        async throws(GatewayError)
    { throw GatewayError(.unreachable, "not in this test") }

    func notify(merchantTokenIdentifier: String, metadata: MerchantTokenUsageMetadata, for merchant: MerchantConfiguration)
        async throws(GatewayError)
    { throw GatewayError(.unreachable, "not in this test") }
}
