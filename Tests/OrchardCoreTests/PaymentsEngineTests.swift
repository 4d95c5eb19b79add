import ApplePay
import Crypto
import Foundation
import Logging
import OrchardCore
import OrchardTesting
import Synchronization
import Testing

/// The engine's rules, one test each, over the in-memory store and the processor double; what
/// must survive a restart over a real file is OrchardSQLiteTests' PaymentsEngineRestartTests.
@Suite("Payments engine rules")
struct PaymentsEngineTests {
    static func withBench(
        inProgressIsRejection: Bool = false, policy: PaymentsEngine.Policy = .init(staleAfter: 30),
        _ body: (inout EngineBench) async throws -> Void
    ) async throws {
        var bench = try EngineBench(inProgressIsRejection: inProgressIsRejection, policy: policy)
        try await body(&bench)
    }

    func state(_ bench: EngineBench, _ order: OrderRecord) async throws -> (OrderRecord.State?, [PaymentState], [String]) {
        let payments = try await bench.store.payments(orderId: order.id)
        return (try await bench.store.order(id: order.id)?.state, payments.map(\.state), payments.map(\.reference))
    }

    @Test(
        "charge still running, the retry answered 'in progress' (409 or Worldpay's 400), then a retry: one charge, one reference",
        arguments: [false, true])
    func inProgressThenRetry(inProgressIsRejection: Bool) async throws {
        try await Self.withBench(inProgressIsRejection: inProgressIsRejection) { bench in
            let order = try await bench.order()
            bench.processor.script([.delayPastTimeout])
            #expect(try await bench.tap(order).failureCode == .paymentUnknown)
            // The processor is still working on attempt 1: whatever it answers is not an outcome.
            #expect(try await bench.tap(order).failureCode == .paymentUnknown)
            #expect(try await state(bench, order) == (.unknown, [.unknown], ["\(order.id)-1"]))
            bench.clock.advance(30)
            let paid = try await bench.tap(order).get()
            #expect(paid.reference == "\(order.id)-1" && paid.sends == 3)
            #expect(try await state(bench, order) == (.paid, [.authorized], ["\(order.id)-1"]))
            #expect(bench.processor.charges == ["\(order.id)-1"])
        }
    }

    @Test("not found proves nothing only as of when the processor was asked: an answer that comes after the lag is no licence to re-send")
    func slowNotFound() async throws {
        try await Self.withBench { bench in
            let order = try await bench.order()
            bench.processor.script([.dropAfterCharge])
            #expect(try await bench.tap(order).failureCode == .paymentUnknown)
            // The processor's records lag 900 s; its "not found" arrives once they would no longer lag.
            bench.processor.lookups.withLock { [clock = bench.clock] in
                $0 = { _ in
                    clock.advance(901)
                    return .notFound(lag: 900)
                }
            }
            #expect(try await bench.tap(order).failureCode == .paymentUnknown, "asked within the lag: nothing is sent")
            #expect(bench.processor.requests == 1)
            bench.processor.lookups.withLock { $0 = { _ in .notFound(lag: 900) } }
            let paid = try await bench.tap(order).get()
            #expect(paid.sends == 2 && bench.processor.requests == 2, "asked after the lag: re-sent once")
            #expect(bench.processor.charges == ["\(order.id)-1"])
        }
    }

    @Test("while an attempt is pending, a retry is refused with payment_unknown and no reference is issued")
    func pendingRefusesRetry() async throws {
        try await Self.withBench { bench in
            let order = try await bench.order()
            bench.processor.holdNextRequest()
            let first = Task { [bench] in try await bench.tap(order) }
            try #require(try await Eventually.until(every: .milliseconds(1)) { bench.processor.isHolding })
            #expect(try await bench.tap(order).failureCode == .paymentUnknown)
            #expect(try await state(bench, order) == (.pending, [.pending], ["\(order.id)-1"]))
            bench.processor.release()
            #expect(try await first.value.get().state == .authorized)
            #expect(bench.processor.requests == 1)
        }
    }

    @Test("a token for a key the merchant does not list: refused, nothing sent or recorded, the log names both hashes")
    func unknownProcessingKey() async throws {
        try await Self.withBench { bench in
            let order = try await bench.order()
            let logs = CapturingLogHandler()
            try bench.restart(logHandler: logs)
            // Encrypted to a processing certificate activated at Apple that Orchard was not given.
            let other = P256.KeyAgreement.PrivateKey()
            let token = PaymentToken(
                paymentData: try bench.minter.mintEC(
                    payload: TokenMinter.samplePayload(amount: 990), to: other.publicKey, merchantIdentifier: EngineBench.merchant,
                    applicationDataHash: Array(SHA256.hash(data: order.applicationData)), signingTime: bench.clock.now))
            await #expect(throws: CoreError(.invalidToken, "the payment could not be verified (unknownProcessingKey)")) {
                try await bench.engine.authorize(.init(merchantIdentifier: EngineBench.merchant, orderId: order.id, token: token))
            }
            #expect(bench.processor.requests == 0)
            #expect(try await state(bench, order) == (.open, [], []))
            let hash = { (key: P256.KeyAgreement.PublicKey) in Data(SHA256.hash(data: key.derRepresentation)).base64EncodedString() }
            let refusal = logs.records.withLock { $0.first { $0.message.contains("payment token refused") } }
            let detail = try #require(refusal?.metadata["detail"].map { "\($0)" })
            #expect(detail.contains("publicKeyHash \(hash(other.publicKey))"), "\(detail)")
            #expect(detail.contains("processing keys have \(hash(EngineBench.processingKey.publicKey))"), "\(detail)")
        }
    }

    @Test("the token's network, sent unsigned by the browser or app, is kept only as Apple names networks")
    func networkIsBounded() async throws {
        try await Self.withBench { bench in
            for (network, kept) in [
                ("Visa", "Visa"), ("CartesBancaires", "CartesBancaires"), (String(repeating: "V", count: 40_000), nil),
                ("Visa\u{1B}[31m", nil), ("", nil),
            ] as [(String, String?)] {
                let order = try await bench.order()
                var token = try bench.token(for: order)
                token.paymentMethod = .init(displayName: "Visa 0492", network: network, type: "debit")
                let paid = try await bench.engine.authorize(
                    .init(merchantIdentifier: EngineBench.merchant, orderId: order.id, token: token))
                #expect(paid.network == kept, "\(network.prefix(20))")
            }
        }
    }

    @Test("an operator's resolve loses to a retry that already took the payment back to pending")
    func resolveRacesRetry() async throws {
        try await Self.withBench { bench in
            let order = try await bench.order()
            bench.processor.script([.serverError])
            #expect(try await bench.tap(order).failureCode == .paymentUnknown)
            let payment = try #require(try await bench.store.payments(orderId: order.id).first)
            // The processor has no record: an operator would resolve "refused"; a retry is under way.
            bench.processor.holdNextRequest()
            let retry = Task { [bench] in try await bench.tap(order) }
            try #require(try await Eventually.until(every: .milliseconds(1)) { bench.processor.isHolding })
            await #expect(throws: CoreError.self) { try await bench.engine.resolve(paymentId: payment.id, as: .refused) }
            bench.processor.release()
            #expect(try await retry.value.get().state == .authorized)
            #expect(try await state(bench, order) == (.paid, [.authorized], ["\(order.id)-1"]))
            // And the compare-and-set itself: a resolve of a payment that is no longer unknown changes nothing.
            let stale = PaymentTransition(
                paymentId: payment.id, orderId: order.id, move: PaymentLifecycle.move(.resolvedRefused), at: bench.clock.now)
            #expect(try await bench.store.transition(stale) == nil)
            #expect(try await state(bench, order) == (.paid, [.authorized], ["\(order.id)-1"]))
        }
    }

    @Test("a move whose order is not in the expected state rolls the payment back too")
    func orderCompareAndSet() async throws {
        try await Self.withBench { bench in
            let order = try await bench.order()
            bench.processor.script([.serverError])
            _ = try await bench.tap(order)
            let payment = try #require(try await bench.store.payments(orderId: order.id).first)
            var move = PaymentLifecycle.move(.resolvedAuthorized)
            move.order = (.open, .paid)
            let change = PaymentTransition(paymentId: payment.id, orderId: order.id, move: move, at: bench.clock.now)
            #expect(try await bench.store.transition(change) == nil)
            #expect(try await state(bench, order) == (.unknown, [.unknown], ["\(order.id)-1"]))
        }
    }

    @Test("a rejection on a reference's first send is processor_rejected (nothing charged); the next tap gets a new reference")
    func firstSendRejection() async throws {
        try await Self.withBench { bench in
            let order = try await bench.order()
            bench.processor.script([.badRequest])
            #expect(try await bench.tap(order).failureCode == .processorRejected)
            #expect(try await state(bench, order) == (.open, [.failed], ["\(order.id)-1"]))
            _ = try await bench.tap(order).get()
            #expect(try await state(bench, order) == (.paid, [.failed, .authorized], ["\(order.id)-1", "\(order.id)-2"]))
        }
    }

    @Test("a rejection of a re-send proves nothing: the payment stays unknown")
    func resendRejection() async throws {
        try await Self.withBench { bench in
            let order = try await bench.order()
            bench.processor.script([.dropAfterCharge, .badRequest])
            #expect(try await bench.tap(order).failureCode == .paymentUnknown)
            #expect(try await bench.tap(order).failureCode == .paymentUnknown)
            #expect(try await state(bench, order) == (.unknown, [.unknown], ["\(order.id)-1"]))
            _ = try await bench.tap(order).get()
            #expect(bench.processor.charges == ["\(order.id)-1"])
        }
    }

    @Test("a replayed token is refused and changes nothing; settle and cancel follow the table")
    func replayAndBackOffice() async throws {
        try await Self.withBench { bench in
            let order = try await bench.order()
            let token = try bench.token(for: order)
            let attempt = PaymentsEngine.Attempt(merchantIdentifier: EngineBench.merchant, orderId: order.id, token: token)
            let payment = try await bench.engine.authorize(attempt)
            await #expect(throws: CoreError(.replayedPayment, "this payment was already submitted")) {
                try await bench.engine.authorize(attempt)
            }
            let settled = try await bench.engine.settle(paymentId: payment.id)
            #expect(settled.state == .settled)
            #expect(settled.links == ["refund": "https://psp.example/refunds/\(payment.reference)"], "the settle answer's links are kept")
            #expect(try await bench.store.payment(id: payment.id)?.processorReference == payment.processorReference)
            await #expect(throws: CoreError.self) { try await bench.engine.cancel(paymentId: payment.id) }
            let second = try await bench.order()
            let other = try await bench.tap(second).get()
            #expect(try await bench.engine.cancel(paymentId: other.id).state == .cancelled)
            #expect(try await bench.store.order(id: second.id)?.state == .cancelled)
            #expect(try await bench.tap(second).failureCode == .orderNotOpen)
        }
    }

    @Test("a settle and a cancel at once make one processor call: the other is told one is in progress, and nothing else changes")
    func concurrentBackOffice() async throws {
        try await Self.withBench { bench in
            let order = try await bench.order()
            let payment = try await bench.tap(order).get()
            bench.processor.holdNextRequest()
            let engine = bench.engine
            let settling = Task { try await engine.settle(paymentId: payment.id) }
            // The settle has claimed the payment and is with the processor.
            try #require(try await Eventually.until(every: .milliseconds(1)) { bench.processor.isHolding })
            await #expect(throws: CoreError.self) { try await engine.cancel(paymentId: payment.id) }
            await #expect(throws: CoreError.self) { try await engine.settle(paymentId: payment.id) }
            #expect(bench.processor.backOfficeCalls == ["settle"], "the concurrent calls never reached the processor")
            bench.processor.release()
            #expect(try await settling.value.state == .settled)
            #expect(try await bench.store.order(id: order.id)?.state == .paid)
            // A cancel afterwards is refused for the payment's state, not for a held claim.
            await #expect(throws: CoreError(.invalidState, "only an authorized payment can be cancelled; this one is settled")) {
                try await engine.cancel(paymentId: payment.id)
            }
        }
    }

    @Test("the payment-states table of docs/payment-states.md is the engine's")
    func documentedTable() throws {
        let page = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("docs/payment-states.md")
        let text = try String(contentsOf: page, encoding: .utf8)
        #expect(text.contains(PaymentLifecycle.markdown))
    }
}
