import ApplePay
import Foundation
import OrchardCore
import OrchardTesting
import Synchronization
import Testing

@testable import OrchardServices

/// The operational gauges' loop driven directly. The gauges' values go to swift-metrics' one
/// process-wide backend, which this test process must not claim (the server's tests install
/// Prometheus there): what is checked is when the store is asked, on a clock that counts passes.
@Suite("OperationalGauges: a store that cannot count is asked once; one that failed is asked again")
struct OperationalGaugesTests {
    /// A store that counts (or not, or fails) as the test says, and counts how often it was asked.
    final class Store: OperationalCounting {
        enum Answer { case counts, cannotCount, fails }
        struct Down: Error {}

        let answer: Answer
        let asked = Atomic<Int>(0)
        init(_ answer: Answer) { self.answer = answer }

        func operationalCounts() async throws -> OperationalCounts? {
            asked.add(1, ordering: .relaxed)
            switch answer {
            case .counts:
                return OperationalCounts(
                    payments: [.authorized: 2], pendingWebhooks: 1, oldestPendingWebhook: Date(), pendingTokenEvents: 0,
                    oldestPendingTokenEvent: nil, oldestUnknownPayment: nil)
            case .cannotCount: return nil
            case .fails: throw Down()
            }
        }
        func checkAvailable() async throws {}
    }

    /// The time, read once by every pass (for the certificates' days left): a count of passes.
    final class CountingClock: Sendable {
        let reads = Atomic<Int>(0)
        var source: TimeSource {
            TimeSource { [self] in
                reads.add(1, ordering: .relaxed)
                return Date()
            }
        }
    }

    func gauges(_ store: Store, clock: CountingClock = CountingClock()) -> OperationalGauges {
        OperationalGauges(store: store, certificates: [], time: clock.source, interval: .milliseconds(10), logger: LoopFixtures.quiet)
    }

    @Test("recordStore: true for a store that counts or failed this time, false for one that cannot count")
    func recordStore() async {
        #expect(await gauges(Store(.counts)).recordStore())
        #expect(await gauges(Store(.fails)).recordStore(), "a failure may pass: asked again")
        #expect(await !gauges(Store(.cannotCount)).recordStore())
    }

    @Test("running: a store that cannot count is asked once, while the passes go on")
    func cannotCountAskedOnce() async throws {
        let store = Store(.cannotCount)
        let clock = CountingClock()
        let gauges = gauges(store, clock: clock)
        try await LoopFixtures.running(gauges.run) {
            let passes = try await Eventually.until { clock.reads.load(ordering: .relaxed) >= 5 }
            #expect(passes)
        }
        #expect(store.asked.load(ordering: .relaxed) == 1)
    }

    @Test("running: a store whose count failed is asked again at the next pass")
    func failureAskedAgain() async throws {
        let store = Store(.fails)
        let gauges = gauges(store)
        try await LoopFixtures.running(gauges.run) {
            let asked = try await Eventually.until { store.asked.load(ordering: .relaxed) >= 3 }
            #expect(asked)
        }
    }
}
