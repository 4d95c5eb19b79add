import Foundation
import NIOPosix
import OrchardCore
import OrchardTesting
import PostgresNIO
import Synchronization
import Testing

@testable import OrchardPostgres

/// A store call whose statement never completes: postgres-nio never completes a statement
/// written to a connection that has just closed, and ignores cancellation while it waits. The
/// chaos tests met it when PostgreSQL stopped: one request hung for good, and the graceful
/// shutdown waited for it until ServiceLifecycle's cancellation timeout trapped. The store now
/// answers its caller at the call deadline and gives the (closed) connection back to the pool.
@Suite("PostgreSQL store: a call that never returns is answered at its deadline", .serialized, .enabled(if: PostgresServer.enabled))
struct PostgresAbandonTests {
    final class Flag: Sendable {
        let value = Atomic<Bool>(false)
    }

    @Test("a body that never returns: unavailable at the deadline, and the only pooled connection serves the next call")
    func stuckBody() async throws {
        let server = try await PostgresServer.shared()
        try await server.withDatabase(poolSize: 1) { settings in
            var settings = settings
            settings.limits = PostgresSessionLimitsTests.limits
            // The call's own deadline is under test, not the wait for a connection: a loaded
            // 2-core machine can take longer than 500 ms to open the pool's one connection (CI
            // met it, at the first call and at the reopening after the abandoned one).
            settings.acquireTimeout = .seconds(10)
            let bound = settings.acquireTimeout + settings.limits.callTimeout + .seconds(8)
            try await PostgresSessionLimitsTests.open(settings).withRunning { store in
                // Stands for the statement that never completes: nothing but the test opens it,
                // and waiting on it ignores cancellation.
                let never = PostgresStore.Gate()
                defer { never.open() }
                let stuck = try await PostgresSessionLimitsTests.outcome(within: bound) {
                    _ = try await store.leased { _ in await never.wait() }
                }
                let result = try #require(stuck, "the call was never answered")
                #expect(throws: StoreError.self) { try result.get() }
                if case .failure(let error as StoreError) = result {
                    #expect(error.code == .unavailable && error.message.contains("callTimeoutMilliseconds"), "\(error)")
                }
                // The pool's one connection came back (closed, so the pool makes a new one).
                let next = try await PostgresSessionLimitsTests.outcome(within: bound) {
                    _ = try await store.rows(PostgresQuery(unsafeSQL: "SELECT 1 AS one"))
                }
                #expect(throws: Never.self) { try #require(next, "the next call got no connection").get() }
            }
        }
    }

    @Test("a call from an event loop runs its work on that loop; one from elsewhere, on the default executor")
    func callersLoop() async throws {
        let loop = MultiThreadedEventLoopGroup.singleton.next()
        let executor = try #require(try await loop.submit { LoopExecutor.current() }.get())
        #expect(executor.eventLoop === loop)
        #expect(try await loop.submit { LoopExecutor.current() }.get() === executor, "one executor per loop")
        #expect(LoopExecutor.current() == nil, "a test runs on Swift's pool, on no loop")
        let onLoop = try await withTaskExecutorPreference(executor) {
            try await PostgresStore.abandonable { _ in loop.inEventLoop }
        }
        #expect(onLoop)
        #expect(try await PostgresStore.abandonable { _ in MultiThreadedEventLoopGroup.currentEventLoop == nil })
    }

    @Test("abandonable: the work's result, or the abandonment first; cancelling the caller cancels the work")
    func abandonable() async throws {
        #expect(try await PostgresStore.abandonable { _ in 7 } == 7)
        let never = PostgresStore.Gate()
        defer { never.open() }
        struct Given: Error {}
        await #expect(throws: Given.self) {
            try await PostgresStore.abandonable { abandon -> Int in
                abandon(Given())
                await never.wait()
                return 1
            }
        }
        let sawCancel = Flag()
        let started = PostgresStore.Gate()
        let caller = Task {
            try await PostgresStore.abandonable { _ -> Int in
                started.open()
                do {
                    try await Task.sleep(for: .seconds(3600))  // ends only by cancellation
                } catch {
                    sawCancel.value.store(true, ordering: .relaxed)
                }
                throw CancellationError()
            }
        }
        await started.wait()
        caller.cancel()
        await #expect(throws: CancellationError.self) { try await caller.value }
        let cancelled = sawCancel.value.load(ordering: .relaxed)
        #expect(cancelled)
    }
}
