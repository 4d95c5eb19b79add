import ApplePay
import Foundation
import OrchardCore
import OrchardTesting
import Synchronization
import Testing

/// Capturing part of an authorization: what the capture took is recorded with the move to
/// `settled` and reported, and refunds are bounded by it. The in-memory store and the processor double.
struct PartialCaptureEngineTests {
    @Test("a capture of part of the amount records what it took; refunds are bounded by it; an amount outside 1…authorized sends nothing")
    func partialThenRefunds() async throws {
        let bench = try EngineBench()
        let order = try await bench.order()
        let payment = try await bench.tap(order).get()
        for wrong: Int64 in [0, -1, payment.amount + 1] {
            await #expect(throws: CoreError.self) { try await bench.engine.settle(paymentId: payment.id, amount: wrong) }
        }
        #expect(bench.processor.backOfficeCalls.isEmpty, "refused before the processor")
        let settled = try await bench.engine.settle(paymentId: payment.id, merchantIdentifier: EngineBench.merchant, amount: 600)
        #expect(settled.state == .settled && settled.amountCaptured == 600 && settled.captured == 600)
        #expect(bench.processor.captures.withLock { $0 } == [600])
        #expect(try await bench.store.payment(id: payment.id)?.amountCaptured == 600)
        let event = try #require(
            try await bench.store.webhookEvents(merchantIdentifier: nil, state: nil, limit: 10).first { $0.type == .paymentSettled })
        let data = try #require((try JSONSerialization.jsonObject(with: Data(event.payload)) as? [String: Any])?["data"] as? [String: Any])
        #expect((data["payment"] as? [String: Any])?["amountCaptured"] as? Int == 600)
        await #expect(throws: CoreError.self) {
            try await bench.engine.refund(
                paymentId: payment.id, merchantIdentifier: EngineBench.merchant, amount: 601, idempotencyKey: "r1")
        }
        let rest = try await bench.engine.refund(
            paymentId: payment.id, merchantIdentifier: EngineBench.merchant, amount: nil, idempotencyKey: "r2")
        #expect(rest.amount == 600 && rest.state == .refunded, "everything left is what was captured")
    }

    @Test("no amount, or the whole amount, captures the whole payment as before")
    func whole() async throws {
        let bench = try EngineBench()
        let first = try await bench.tap(try await bench.order()).get()
        #expect(try await bench.engine.settle(paymentId: first.id).amountCaptured == first.amount)
        let second = try await bench.tap(try await bench.order()).get()
        #expect(try await bench.engine.settle(paymentId: second.id, amount: second.amount).amountCaptured == second.amount)
        #expect(bench.processor.captures.withLock { $0 } == [first.amount, second.amount])
    }
}
