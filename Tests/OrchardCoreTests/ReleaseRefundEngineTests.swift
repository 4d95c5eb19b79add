import ApplePay
import Foundation
import OrchardCore
import OrchardTesting
import Synchronization
import Testing

/// A refund of a payment not captured yet: the whole amount voids it, part of it captures the
/// rest; answered as a refund (`released`), recorded in the move's own transaction, so a refusal
/// or a repeat never loses or doubles anything. The in-memory store and the processor double.
struct ReleaseRefundEngineTests {
    static let merchant = EngineBench.merchant

    func events(_ bench: EngineBench) async throws -> [WebhookEventType] {
        try await bench.store.webhookEvents(merchantIdentifier: nil, state: nil, limit: 100).reversed().map(\.type)
    }

    @Test("the whole amount of an authorized payment: voided (payment.cancelled), answered as a released refund; a repeat answers the same")
    func wholeVoids() async throws {
        let bench = try EngineBench()
        let payment = try await bench.tap(try await bench.order()).get()
        let refund = try await bench.engine.refund(
            paymentId: payment.id, merchantIdentifier: Self.merchant, amount: nil, idempotencyKey: "k")
        #expect(refund.state == .refunded && refund.released == true && refund.amount == payment.amount)
        #expect(try await bench.store.payment(id: payment.id)?.state == .cancelled)
        #expect(bench.processor.backOfficeCalls == ["cancel"])
        let again = try await bench.engine.refund(
            paymentId: payment.id, merchantIdentifier: Self.merchant, amount: nil, idempotencyKey: "k")
        #expect(again == refund && bench.processor.backOfficeCalls == ["cancel"], "the same refund, nothing sent again")
        #expect(try await bench.store.refunds(paymentId: payment.id) == [refund])
        let types = try await events(bench)
        #expect(types.suffix(2) == [.paymentCancelled, .paymentRefunded])
    }

    @Test("part of it: the rest is captured (amountCaptured), the part released; later refunds are bounded by what was captured")
    func partCapturesTheRest() async throws {
        let bench = try EngineBench()
        let payment = try await bench.tap(try await bench.order()).get()
        let refund = try await bench.engine.refund(
            paymentId: payment.id, merchantIdentifier: Self.merchant, amount: 300, idempotencyKey: "a")
        #expect(refund.released == true && refund.amount == 300 && refund.state == .refunded)
        let settled = try #require(try await bench.store.payment(id: payment.id))
        #expect(settled.state == .settled && settled.amountCaptured == payment.amount - 300)
        #expect(bench.processor.captures.withLock { $0 } == [payment.amount - 300])
        await #expect(throws: CoreError.self) {
            try await bench.engine.refund(
                paymentId: payment.id, merchantIdentifier: Self.merchant, amount: payment.amount - 299, idempotencyKey: "b")
        }
        let rest = try await bench.engine.refund(paymentId: payment.id, merchantIdentifier: Self.merchant, amount: nil, idempotencyKey: "c")
        #expect(rest.amount == payment.amount - 300 && rest.released == nil, "a real refund of what was captured")
        let types = try await events(bench)
        #expect(types.suffix(3) == [.paymentSettled, .paymentRefunded, .paymentRefunded])
    }

    @Test("a processor that refuses the void or capture: still authorized, no refund recorded; the same request again goes through")
    func refusalRecordsNothing() async throws {
        let bench = try EngineBench()
        let payment = try await bench.tap(try await bench.order()).get()
        bench.processor.settleRefusals.withLock { $0 = 1 }
        await #expect(throws: CoreError.self) {
            try await bench.engine.refund(paymentId: payment.id, merchantIdentifier: Self.merchant, amount: 100, idempotencyKey: "k")
        }
        #expect(try await bench.store.payment(id: payment.id)?.state == .authorized)
        #expect(try await bench.store.refunds(paymentId: payment.id).isEmpty)
        let refund = try await bench.engine.refund(
            paymentId: payment.id, merchantIdentifier: Self.merchant, amount: 100, idempotencyKey: "k")
        #expect(refund.released == true && bench.processor.backOfficeCalls == ["settle", "settle"])
        await #expect(throws: CoreError.self) {
            try await bench.engine.refund(
                paymentId: payment.id, merchantIdentifier: Self.merchant, amount: payment.amount + 1, idempotencyKey: "z")
        }
    }

    @Test("while a capture of it is with the processor, a refund is told to wait and sends nothing")
    func captureInFlight() async throws {
        let bench = try EngineBench()
        let payment = try await bench.tap(try await bench.order()).get()
        bench.processor.holdNextRequest()
        let engine = bench.engine
        let capturing = Task { try await engine.settle(paymentId: payment.id) }
        try #require(try await Eventually.until(every: .milliseconds(1)) { bench.processor.isHolding })
        await #expect(throws: CoreError.self) {
            try await engine.refund(paymentId: payment.id, merchantIdentifier: Self.merchant, amount: nil, idempotencyKey: "k")
        }
        bench.processor.release()
        #expect(try await capturing.value.state == .settled)
        #expect(try await bench.store.refunds(paymentId: payment.id).isEmpty)
        let refund = try await engine.refund(paymentId: payment.id, merchantIdentifier: Self.merchant, amount: nil, idempotencyKey: "k")
        #expect(refund.released == nil && refund.state == .refunded, "captured meanwhile: an ordinary refund")
    }
}
