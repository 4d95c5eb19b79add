import ApplePay
import Foundation
import OrchardCore
import OrchardTesting
import Synchronization
import Testing

@testable import OrchardServices

/// The reconciler's loop driven directly, over the engine bench (the in-memory store, a
/// simulated processor, a clock the test moves). The engine's rules have their own tests; these
/// check that the loop runs them, at once at startup, and charges nobody twice.
@Suite("PaymentReconciler: its first pass runs at startup and settles what a crash or a lost answer left")
struct PaymentReconcilerTests {
    func state(_ bench: EngineBench, _ order: OrderRecord) async throws -> OrderRecord.State? {
        try await bench.store.order(id: order.id)?.state
    }

    @Test("a payment left pending by a failed write is found stale and settled by the first pass, an hour before the second")
    func stalePending() async throws {
        let bench = try EngineBench()
        let order = try await bench.order()
        bench.payments.failing.store(true, ordering: .relaxed)
        #expect(try await bench.tap(order).failureCode == .paymentUnknown)
        bench.payments.failing.store(false, ordering: .relaxed)
        #expect(try await state(bench, order) == .pending)
        bench.clock.advance(31)

        let reconciler = PaymentReconciler(engine: bench.engine, interval: .seconds(3600), logger: LoopFixtures.quiet)
        try await LoopFixtures.running(reconciler.run) {
            let paid = try await Eventually.until { try await state(bench, order) == .paid }
            #expect(paid)
        }
        #expect(bench.processor.charges == ["\(order.id)-1"], "charged once: the re-send reuses the reference")
    }

    @Test("a charge whose answer was lost is re-sent once due and resolved, charged once")
    func lostAnswer() async throws {
        let bench = try EngineBench()
        let order = try await bench.order()
        bench.processor.script([.dropAfterCharge])
        _ = try await bench.tap(order)
        #expect(try await state(bench, order) == .unknown)
        bench.clock.advance(30)

        let reconciler = PaymentReconciler(engine: bench.engine, interval: .milliseconds(20), logger: LoopFixtures.quiet)
        try await LoopFixtures.running(reconciler.run) {
            let paid = try await Eventually.until { try await state(bench, order) == .paid }
            #expect(paid)
        }
        #expect(bench.processor.charges == ["\(order.id)-1"])
    }
}
