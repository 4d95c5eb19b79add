import Logging
import OrchardCore
import OrchardServices
import OrchardTesting
import Synchronization
import Testing

/// `/health`'s store answer follows the store's own calls, not only the periodic check: a call
/// that fails as unavailable turns it 503 at once, and a call answered turns it back.
@Suite("Store readiness: a failed call turns /health at once")
struct StoreReadinessTests {
    /// A store whose check always passes, and counts how often it ran.
    final class Store: OperationalCounting {
        let checks = Atomic<Int>(0)
        let availability: StoreAvailability? = StoreAvailability()
        func operationalCounts() async throws -> OperationalCounts? { nil }
        func checkAvailable() async throws { checks.add(1, ordering: .relaxed) }
    }

    @Test("unavailable at once on a failed call, not at the next check an hour away; available again on an answered one")
    func followsCalls() async throws {
        let store = Store()
        let activity = ServerActivity()
        let readiness = StoreReadiness(store: store, activity: activity, interval: .seconds(3600), logger: Logger(label: "orchard.test"))
        let loop = Task { await readiness.run() }
        // The first check has run, so the loop has subscribed (it does before checking).
        #expect(try await Eventually.until { store.checks.load(ordering: .relaxed) >= 1 })
        #expect(activity.storeAvailable)
        store.availability?.report(available: false)
        #expect(!activity.storeAvailable, "a call that failed as unavailable")
        store.availability?.report(available: true)
        #expect(activity.storeAvailable, "a call answered again")
        #expect(store.checks.load(ordering: .relaxed) == 1, "no check ran in between: the calls decided")
        loop.cancel()
        await loop.value
    }
}
