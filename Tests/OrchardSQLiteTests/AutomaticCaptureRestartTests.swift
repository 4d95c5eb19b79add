import ApplePay
import Foundation
import OrchardCore
import OrchardSQLite
import OrchardTesting
import Synchronization
import Testing

/// Automatic capture over a real SQLite file reopened as a new process would open it: a capture
/// owed when the process stopped, or whose processor refused it, is still owed after a restart.
@Suite("Automatic capture over SQLite: what survives a restart")
struct AutomaticCaptureRestartTests {
    @Test(
        "the process stops right after the authorization, then again after a refusal: each restart still owes the capture, which is made once"
    )
    func owedAcrossRestarts() async throws {
        try await PaymentsEngineRestartTests.withBench { bench in
            let order = try await bench.order(capture: .automatic)
            let payment = try await bench.tap(order).get()
            #expect(payment.captureDueAt != nil)
            try bench.restart()
            bench.processor.settleRefusals.withLock { $0 = 1 }
            let refused = await bench.engine.captureDue()
            #expect(refused.refused == 1)
            try bench.restart()
            let early = await bench.engine.captureDue()
            #expect(early == .init(), "due again only after its backoff")
            bench.clock.advance(AutomaticCapture.firstRetryDelay)
            let captured = await bench.engine.captureDue()
            #expect(captured.captured == 1)
            let stored = try #require(try await bench.store.payment(id: payment.id))
            #expect(stored.state == .settled && stored.captureDueAt == nil && stored.captureAttempts == 1)
            #expect(bench.processor.backOfficeCalls == ["settle", "settle"], "one refused, one accepted")
        }
    }
}
