import ApplePay
import Foundation
import Logging
import OrchardCore
import OrchardSQLite
import OrchardTesting
import Synchronization
import Testing

/// What the payments engine must carry across a restart, over a real SQLite file reopened as a
/// new process would open it: a stale pending payment, reconciliation's backoff, and the
/// payment model's seeded sequences. The engine's other rules run in memory in OrchardCoreTests.
@Suite("Payments engine over SQLite: what survives a restart")
struct PaymentsEngineRestartTests {
    /// A bench whose store is a SQLite file in a fresh folder, reopened at every restart.
    static func withBench(policy: PaymentsEngine.Policy = .init(staleAfter: 30), _ body: (inout EngineBench) async throws -> Void)
        async throws
    {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.path("orchard.sqlite")
        var bench = try EngineBench(policy: policy, opening: { try SQLiteStore(path: path) })
        try await body(&bench)
    }

    func state(_ bench: EngineBench, _ order: OrderRecord) async throws -> (OrderRecord.State?, [PaymentState], [String]) {
        let payments = try await bench.store.payments(orderId: order.id)
        return (try await bench.store.order(id: order.id)?.state, payments.map(\.state), payments.map(\.reference))
    }

    @Test("a store failure after the processor answered: payment_unknown; at restart the stale pending becomes unknown and is reconciled")
    func storeFailureThenRestart() async throws {
        try await Self.withBench { bench in
            let order = try await bench.order()
            bench.payments.failing.store(true, ordering: .relaxed)
            #expect(try await bench.tap(order).failureCode == .paymentUnknown)
            #expect(bench.processor.charges.count == 1)
            #expect(try await state(bench, order) == (.pending, [.pending], ["\(order.id)-1"]))
            #expect(try await bench.tap(order).failureCode == .paymentUnknown, "pending: no second reference")

            let logs = CapturingLogHandler()
            try bench.restart(logHandler: logs)
            #expect(await bench.engine.recoverStalePending() == 0, "not stale yet: a call could still be running")
            bench.clock.advance(31)
            #expect(await bench.engine.recoverStalePending() == 1)
            let warnings = logs.records.withLock { $0.filter { $0.level == .warning } }
            #expect(warnings.count == 1 && warnings.first?.message.contains("left pending") == true)
            #expect(warnings.first?.metadata["reference"] == "\(order.id)-1")
            #expect(try await state(bench, order) == (.unknown, [.unknown], ["\(order.id)-1"]))
            let report = await bench.engine.reconcile()
            #expect(report.resent == 1 && report.resolved == 1)
            #expect(try await state(bench, order) == (.paid, [.authorized], ["\(order.id)-1"]))
            #expect(bench.processor.charges == ["\(order.id)-1"])
            #expect(try await bench.store.retryPayload(paymentId: try await bench.store.payments(orderId: order.id)[0].id) == nil)
        }
    }

    @Test("the reconciler re-sends unknown payments with backoff, across a restart, and leaves the hopeless ones to an operator")
    func reconciliation() async throws {
        let policy = PaymentsEngine.Policy(staleAfter: 30, maximumReconcileAttempts: 3, firstReconcileDelay: 10)
        try await Self.withBench(policy: policy) { bench in
            let charged = try await bench.order()
            bench.processor.script([.dropAfterCharge])
            _ = try await bench.tap(charged)
            let silent = try await bench.order()
            bench.processor.script(Array(repeating: .serverError, count: 4), for: "\(silent.id)-1")
            _ = try await bench.tap(silent)
            #expect(await bench.engine.reconcile() == .init(), "nothing is due before the first delay")

            try bench.restart()
            bench.clock.advance(10)
            // charged: replayed as authorized. silent: 503 again (attempt 1 of 3).
            #expect(await bench.engine.reconcile() == .init(stale: 0, resent: 2, resolved: 1, needOperator: 0))
            #expect(try await state(bench, charged) == (.paid, [.authorized], ["\(charged.id)-1"]))
            bench.clock.advance(19)
            #expect(await bench.engine.reconcile() == .init(), "the second re-send waits twice as long")
            bench.clock.advance(1)
            #expect(await bench.engine.reconcile().resent == 1)
            bench.clock.advance(40)
            #expect(await bench.engine.reconcile() == .init(stale: 0, resent: 1, resolved: 0, needOperator: 1))
            bench.clock.advance(100_000)
            #expect(await bench.engine.reconcile() == .init(), "left to an operator")
            let unknown = try await bench.store.payments(state: .unknown, limit: 10)
            #expect(unknown.map(\.orderId) == [silent.id])
            #expect(unknown.first?.reconcileAttempts == 3 && unknown.first?.nextReconcileAt == nil)
            // The operator reads "no record" at the processor and resolves: the order reopens.
            let resolved = try await bench.engine.resolve(paymentId: try #require(unknown.first).id, as: .refused)
            #expect(resolved.state == .refused)
            #expect(try await bench.store.order(id: silent.id)?.state == .open)
            #expect(bench.processor.charges == ["\(charged.id)-1"])
        }
    }

    @Test("seeded sequences of processor behaviours, retries, resolves, restarts and reconciliation keep the invariants (250 on SQLite)")
    func engineSequences() async throws {
        try await Self.withBench { bench in
            let sequences = 250
            let outcome = try await PaymentsModel.run(sequences: sequences, on: &bench)
            if let broken = outcome.broken {
                Issue.record("\(broken)")
                return
            }
            #expect(outcome.problems.isEmpty, "\(outcome.problems.prefix(5))")
            #expect(outcome.left == 0, "every unknown payment was settled by re-sends: \(outcome.left) left")
            #expect(outcome.taps > sequences, "the sequences tapped (\(outcome.taps) taps)")
        }
    }
}
