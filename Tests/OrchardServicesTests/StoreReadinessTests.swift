import Foundation
import OrchardCore
import OrchardTesting
import Synchronization
import Testing

@testable import OrchardServices

/// Store readiness driven directly: a store whose reachability the test decides.
@Suite("StoreReadiness: /health's store answer follows the checks, and the store's own calls at once")
struct StoreReadinessDirectTests {
    /// A store that is reachable until the test says otherwise, counting its checks.
    final class Store: OperationalCounting {
        struct Down: Error, CustomStringConvertible {
            var description: String { "connection refused" }
        }

        let checks = Atomic<Int>(0)
        let reachable = Atomic<Bool>(true)
        let availability: StoreAvailability? = StoreAvailability()

        func operationalCounts() async throws -> OperationalCounts? { nil }
        func checkAvailable() async throws {
            checks.add(1, ordering: .relaxed)
            if !reachable.load(ordering: .relaxed) { throw Down() }
        }
    }

    let store = Store()
    let activity = ServerActivity()

    func readiness(every interval: Duration) -> StoreReadiness {
        StoreReadiness(store: store, activity: activity, interval: interval, logger: LoopFixtures.quiet)
    }

    @Test("a failed check marks the store unavailable; the next answered one available again")
    func checks() async {
        let readiness = readiness(every: .seconds(3600))
        store.reachable.store(false, ordering: .relaxed)
        await readiness.check()
        #expect(!activity.storeAvailable)
        await readiness.check()
        #expect(!activity.storeAvailable, "still down")
        store.reachable.store(true, ordering: .relaxed)
        await readiness.check()
        #expect(activity.storeAvailable)
    }

    @Test("running: a store that goes down is seen by the next check, and back up by the one after it comes back")
    func runningChecks() async throws {
        let readiness = readiness(every: .milliseconds(20))
        try await LoopFixtures.running(readiness.run) { () async throws in
            #expect(try await Eventually.until { store.checks.load(ordering: .relaxed) >= 1 })
            store.reachable.store(false, ordering: .relaxed)
            #expect(try await Eventually.until { !activity.storeAvailable }, "unavailable after a failed check")
            store.reachable.store(true, ordering: .relaxed)
            #expect(try await Eventually.until { activity.storeAvailable }, "available again")
        }
    }

    @Test("running: a call that fails as unavailable turns the answer at once, not at the next check an hour away")
    func followsCalls() async throws {
        let readiness = readiness(every: .seconds(3600))
        try await LoopFixtures.running(readiness.run) { () async throws in
            // The first check has run, so the loop has subscribed (it does before checking).
            #expect(try await Eventually.until { store.checks.load(ordering: .relaxed) >= 1 })
            store.availability?.report(available: false)
            #expect(!activity.storeAvailable, "a call that failed as unavailable")
            store.availability?.report(available: true)
            #expect(activity.storeAvailable, "a call answered again")
            #expect(store.checks.load(ordering: .relaxed) == 1, "no check ran in between: the calls decided")
        }
    }
}
