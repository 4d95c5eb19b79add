import ApplePay
import Foundation
import OrchardCore
import OrchardTesting
import Synchronization
import Testing

/// Automatic capture (`capture: "automatic"`): owed from the move that authorizes, captured by
/// the capture pass through the back office's own path, retried, given up once, and beaten by a
/// manual capture or cancel. The in-memory store and the processor double.
struct AutomaticCaptureEngineTests {
    /// The shopper pays an automatic order through `engine`.
    func pay(_ bench: EngineBench, _ order: OrderRecord, with engine: PaymentsEngine) async throws -> PaymentRecord {
        try await engine.authorize(.init(merchantIdentifier: EngineBench.merchant, orderId: order.id, token: try bench.token(for: order)))
    }

    func events(_ bench: EngineBench, _ type: WebhookEventType) async throws -> Int {
        try await bench.store.webhookEvents(merchantIdentifier: nil, state: nil, limit: 1000).count { $0.type == type }
    }

    @Test(
        "the authorization of an automatic order records its capture due in the same move and wakes the loop; the pass captures it with payment.settled"
    )
    func capturedByThePass() async throws {
        var bench = try EngineBench()
        let woken = Mutex<[String]>([])
        var engine = bench.engine
        engine.onCaptureDue = { id in woken.withLock { $0.append(id) } }
        let order = try await bench.order(capture: .automatic)
        let payment = try await pay(bench, order, with: engine)
        #expect(payment.state == .authorized && payment.captureDueAt == bench.clock.now)
        #expect(try await bench.store.payment(id: payment.id)?.captureDueAt == bench.clock.now, "stored with the authorization")
        #expect(woken.withLock { $0 } == [payment.id])
        #expect(bench.processor.backOfficeCalls.isEmpty, "the shopper's request does not wait for the capture")
        // A manual order's payment owes nothing.
        let manual = try await bench.tap(try await bench.order()).get()
        #expect(manual.captureDueAt == nil)
        // As after kill -9 right after the authorization: the mark is in the store.
        try bench.restart()
        var report = await bench.engine.captureDue()
        #expect(report.captured == 1 && report.refused == 0 && report.skipped == 0)
        let captured = try #require(try await bench.store.payment(id: payment.id))
        #expect(captured.state == .settled && captured.captureDueAt == nil)
        #expect(try await bench.store.payment(id: manual.id)?.state == .authorized)
        #expect(bench.processor.backOfficeCalls == ["settle"])
        #expect(try await events(bench, .paymentSettled) == 1)
        report = await bench.engine.captureDue()
        #expect(report == .init(), "nothing is due any more")
    }

    @Test(
        "a refused capture stays authorized and is tried again after 1, 2, 4 and 8 minutes; the 5th refusal writes payment.capture_failed once and clears the mark; the shop can still capture"
    )
    func refusedFiveTimes() async throws {
        let bench = try EngineBench()
        let order = try await bench.order(capture: .automatic)
        let payment = try await bench.tap(order).get()
        bench.processor.settleRefusals.withLock { $0 = 5 }
        for (refusal, delay) in [(1, 60.0), (2, 120), (3, 240), (4, 480)] {
            let report = await bench.engine.captureDue()
            #expect(report.refused == 1 && report.gaveUp == 0, "refusal \(refusal)")
            let stored = try #require(try await bench.store.payment(id: payment.id))
            #expect(stored.state == .authorized && stored.captureAttempts == refusal)
            #expect(stored.captureDueAt == bench.clock.now.addingTimeInterval(delay))
            bench.clock.advance(delay - 1)
            let early = await bench.engine.captureDue()
            #expect(early == .init(), "not due before its time")
            bench.clock.advance(1)
        }
        let last = await bench.engine.captureDue()
        #expect(last.gaveUp == 1 && last.refused == 0)
        let given = try #require(try await bench.store.payment(id: payment.id))
        #expect(given.state == .authorized && given.captureDueAt == nil && given.captureAttempts == 5)
        #expect(try await events(bench, .paymentCaptureFailed) == 1)
        bench.clock.advance(86_400)
        let after = await bench.engine.captureDue()
        #expect(after == .init())
        #expect(try await events(bench, .paymentCaptureFailed) == 1, "given up once")
        #expect(bench.processor.backOfficeCalls == Array(repeating: "settle", count: 5))
        #expect(try await bench.engine.settle(paymentId: payment.id).state == .settled)
    }

    @Test(
        "a capture with no definite answer is never counted as refused nor given up: it stays due and is tried again when its lease ends; a manual one answers paymentUnknown and holds the operation"
    )
    func noAnswerIsNotARefusal() async throws {
        let bench = try EngineBench()
        let order = try await bench.order(capture: .automatic)
        let payment = try await bench.tap(order).get()
        bench.processor.settleNoAnswers.withLock { $0 = 7 }
        for attempt in 1...7 {
            let report = await bench.engine.captureDue()
            #expect(report.skipped == 1 && report.refused == 0 && report.gaveUp == 0, "attempt \(attempt)")
            let stored = try #require(try await bench.store.payment(id: payment.id))
            #expect(stored.state == .authorized && stored.captureAttempts == 0 && stored.captureDueAt != nil)
            let early = await bench.engine.captureDue()
            #expect(early == .init(), "nothing is tried again before the lease ends")
            bench.clock.advance(bench.engine.policy.operationLease)
        }
        #expect(try await events(bench, .paymentCaptureFailed) == 0, "an unseen outcome is never a failure")
        let done = await bench.engine.captureDue()
        #expect(done.captured == 1)
        #expect(try await bench.store.payment(id: payment.id)?.state == .settled)

        // The shop's own capture, unanswered: 504 payment_unknown, and the operation stays held.
        let manual = try await bench.tap(try await bench.order()).get()
        bench.processor.settleNoAnswers.withLock { $0 = 1 }
        await #expect { _ = try await bench.engine.settle(paymentId: manual.id) } throws: { ($0 as? CoreError)?.code == .paymentUnknown }
        await #expect { _ = try await bench.engine.settle(paymentId: manual.id) } throws: { ($0 as? CoreError)?.code == .invalidState }
        bench.clock.advance(bench.engine.policy.operationLease + 1)
        #expect(try await bench.engine.settle(paymentId: manual.id).state == .settled, "asked again after the lease")
    }

    @Test("a processor's 4xx refuses a capture or cancel definitely, but not 409 (busy) or 429; a 5xx is no answer")
    func definiteStatuses() {
        #expect([400, 401, 402, 404, 422].allSatisfy { ProcessorActionError.isDefinite(status: $0) })
        #expect(![409, 429, 500, 502, 503, 504].contains { ProcessorActionError.isDefinite(status: $0) })
    }

    @Test("a manual capture or cancel meanwhile wins: one processor call, and the mark is cleared when the payment leaves authorized")
    func manualWins() async throws {
        let bench = try EngineBench()
        let first = try await bench.tap(try await bench.order(capture: .automatic)).get()
        bench.processor.holdNextRequest()
        let engine = bench.engine
        let settling = Task { try await engine.settle(paymentId: first.id) }
        try #require(try await Eventually.until(every: .milliseconds(1)) { bench.processor.isHolding })
        // The pass finds the capture held by the shop's: it sends nothing.
        let report = await engine.captureDue()
        #expect(report.skipped == 1 && report.captured == 0 && report.refused == 0)
        #expect(bench.processor.backOfficeCalls == ["settle"])
        bench.processor.release()
        #expect(try await settling.value.state == .settled)
        #expect(try await bench.store.payment(id: first.id)?.captureDueAt == nil)
        let second = try await bench.tap(try await bench.order(capture: .automatic)).get()
        #expect(try await engine.cancel(paymentId: second.id).captureDueAt == nil)
        bench.clock.advance(3600)
        let later = await engine.captureDue()
        #expect(later == .init())
        #expect(bench.processor.backOfficeCalls == ["settle", "cancel"])
        #expect(try await events(bench, .paymentSettled) == 1)
    }

    @Test("an automatic order's payment authorized by an operator's resolve or the processor's records owes its capture too")
    func everyAuthorizationPath() async throws {
        let bench = try EngineBench()
        let resolvedOrder = try await bench.order(capture: .automatic)
        bench.processor.script([.serverError])
        _ = try await bench.tap(resolvedOrder)
        let unknown = try #require(try await bench.store.payments(orderId: resolvedOrder.id).first)
        #expect(unknown.state == .unknown)
        let resolved = try await bench.engine.resolve(paymentId: unknown.id, as: .authorized)
        #expect(resolved.state == .authorized && resolved.captureDueAt == bench.clock.now)
        // The processor's records hold an authorization the shopper's answer never brought.
        let queriedOrder = try await bench.order(capture: .automatic)
        bench.processor.script([.dropAfterCharge])
        _ = try await bench.tap(queriedOrder)
        let dropped = try #require(try await bench.store.payments(orderId: queriedOrder.id).first)
        bench.processor.lookups.withLock {
            $0 = { payment in .found(AuthorizationOutcome(status: .authorized, processorReference: "psp-\(payment.reference)")) }
        }
        bench.clock.advance(3600)
        let reconciled = await bench.engine.reconcile()
        #expect(reconciled.settledByQuery == 1)
        let queried = try #require(try await bench.store.payment(id: dropped.id))
        #expect(queried.state == .authorized && queried.captureDueAt == bench.clock.now)
        let captured = await bench.engine.captureDue()
        #expect(captured.captured == 2)
    }
}
