import Foundation
import OrchardCore
import Synchronization

/// The invariants every quiescent moment must keep, for the orders given.
public enum PaymentInvariants {
    /// Problems found; empty when all hold.
    public static func check(orders: [String], store: any OrderPayments, charges: [String]) async throws -> [String] {
        var problems: [String] = []
        for id in orders {
            let payments = try await store.payments(orderId: id)
            let orderState = try await store.order(id: id)?.state
            let charged = charges.filter { $0.hasPrefix(id + "-") }
            if charged.count > 1 { problems.append("order \(id) charged \(charged.count) times: \(charged)") }
            for reference in charged {
                let states = payments.filter { $0.reference == reference }.map(\.state)
                if states.count != 1 || ![.authorized, .settled, .unknown, .pending].contains(states[0]) {
                    problems.append("charge \(reference) is \(states.map(\.rawValue)) in Orchard")
                }
            }
            let captured = payments.filter { $0.state == .authorized || $0.state == .settled }.count
            if (orderState == .paid) != (captured == 1) || captured > 1 {
                problems.append("order \(id) is \(orderState?.rawValue ?? "missing") with \(captured) authorized payments")
            }
            let open = payments.filter { $0.state == .pending || $0.state == .unknown }
            let expected: Int = orderState == .pending || orderState == .unknown ? 1 : 0
            if open.count != expected || (expected == 1 && open[0].state.rawValue != orderState?.rawValue) {
                problems.append("order \(id) is \(orderState?.rawValue ?? "missing") with \(open.map(\.state.rawValue)) attempts")
            }
            if Set(payments.map(\.reference)).count != payments.count {
                problems.append("order \(id) has two payments under one reference")
            }
        }
        return problems
    }
}

/// Seeded sequences of processor behaviours, retries, resolves, restarts and reconciliation run
/// on an ``EngineBench``: the model the engine's tests run in memory, and the SQLite adapter's
/// over a file reopened at every restart. It reports; the tests assert.
public enum PaymentsModel {
    enum Step: CaseIterable {
        case tap, reconcile, resolve, restart, crashDuringWrite, wait
    }

    /// What a run found.
    public struct Outcome: Sendable {
        /// The first sequence after which an invariant broke (its seed, problems and steps); the
        /// run stops there.
        public var broken: String?
        /// What still broke the invariants once everything left was reconciled.
        public var problems: [String] = []
        /// Payments still unknown or pending once everything left was reconciled.
        public var left = 0
        /// Taps made, crashed ones included.
        public var taps = 0
    }

    /// Runs `sequences` seeded sequences, one order each, checking the invariants after every
    /// step, then settles everything left and checks them on all orders.
    public static func run(sequences: Int, on bench: inout EngineBench) async throws -> Outcome {
        var outcome = Outcome()
        var orders: [String] = []
        for seed in 0..<UInt64(sequences) {
            var random = SplitMix64(seed: seed)
            bench.processor.inProgressIsRejection.store(Bool.random(using: &random), ordering: .relaxed)
            let order = try await bench.order()
            orders.append(order.id)
            var log: [String] = []
            for _ in 0..<Int.random(in: 3...9, using: &random) {
                let step = Step.allCases.randomElement(using: &random)!
                let behaviour = SimulatedBehaviour.allCases.randomElement(using: &random)!
                log.append("\(step)(\(behaviour))")
                if step == .tap || step == .crashDuringWrite { outcome.taps += 1 }
                try await run(step, behaviour, order: order, bench: &bench, random: &random)
                let problems = try await PaymentInvariants.check(
                    orders: [order.id], store: bench.store, charges: bench.processor.charges)
                guard problems.isEmpty else {
                    outcome.broken = "seed \(seed): \(problems.joined(separator: "; ")) after \(log.joined(separator: ", "))"
                    return outcome
                }
            }
        }
        // Settle everything left: every stale or unknown payment gets its answer from the processor.
        try bench.restart()
        for _ in 0..<12 {
            bench.clock.advance(3600)
            _ = await bench.engine.reconcile(limit: 10_000)
        }
        outcome.problems = try await PaymentInvariants.check(orders: orders, store: bench.store, charges: bench.processor.charges)
        outcome.left =
            try await bench.store.payments(state: .unknown, limit: 10_000).count
            + bench.store.payments(state: .pending, limit: 10_000).count
        return outcome
    }

    static func run(
        _ step: Step, _ behaviour: SimulatedBehaviour, order: OrderRecord, bench: inout EngineBench, random: inout SplitMix64
    ) async throws {
        let payments = try await bench.store.payments(orderId: order.id)
        let live = payments.last { $0.state == .unknown || $0.state == .pending }
        let reference = live?.reference ?? "\(order.id)-\(payments.count + 1)"
        bench.processor.script([behaviour], for: reference)
        defer { bench.processor.clearScript(for: reference) }
        switch step {
        case .tap:
            _ = try await bench.tap(order)
        case .crashDuringWrite:
            bench.payments.failing.store(true, ordering: .relaxed)
            _ = try await bench.tap(order)
            try bench.restart()
        case .reconcile:
            _ = await bench.engine.reconcile()
        case .resolve:
            guard let live, live.state == .unknown, let charged = bench.processor.operatorView(live.reference) else { return }
            _ = try? await bench.engine.resolve(paymentId: live.id, as: charged ? .authorized : .refused)
        case .restart:
            try bench.restart()
            await bench.engine.recoverStalePending()
        case .wait:
            bench.clock.advance(Double(Int.random(in: 1...90, using: &random)))
        }
    }
}
