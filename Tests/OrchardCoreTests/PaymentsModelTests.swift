import OrchardCore
import OrchardTesting
import Testing

/// The payment model's seeded sequences in memory; OrchardSQLiteTests runs a share of the same
/// seeds over a SQLite file reopened at every restart.
@Suite("Payments engine: model-based sequences")
struct PaymentsModelTests {
    @Test("seeded sequences of processor behaviours, retries, resolves, restarts and reconciliation keep the invariants (1,000 in memory)")
    func engineSequences() async throws {
        var bench = try EngineBench()
        try await Self.check(sequences: 1000, on: &bench)
    }

    /// Runs the model and asserts what it found: no sequence breaks an invariant, and once
    /// reconciled nothing is left open and every invariant holds.
    static func check(sequences: Int, on bench: inout EngineBench) async throws {
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
