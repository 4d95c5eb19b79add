import ApplePay
import Foundation
import OrchardCore
import Testing

/// Automatic capture on every store: the due mark written by the move that authorizes and
/// cleared by every move out of `authorized`, the capture loop's lease, and a refusal recorded by
/// compare-and-set (giving up writes `payment.capture_failed` in its transaction).
extension ShopStoreContractTests {
    /// Claims `payment` for a new order `order` and authorizes it, owing a capture at `due`.
    static func authorized(_ store: any OrchardStore, order: String, payment: String, due: Int?) async throws -> PaymentRecord {
        try await store.insert(try StoreContractTests.order(order))
        _ = try await store.claimPayment(claim(order, payment: payment))
        let move = PaymentTransition(
            paymentId: payment, orderId: order, move: PaymentLifecycle.move(.authorized), at: at(0), captureDueAt: due.map(at))
        return try #require(try await store.transition(move))
    }

    @Test(
        "an authorization owing a capture records it in its move; the lease takes due payments oldest first past the lease; leaving authorized clears it",
        arguments: Kind.enabled)
    func captureDueLease(kind: Kind) async throws {
        try await StoreContractTests.withStore(kind) { store in
            #expect(try await Self.authorized(store, order: "o1", payment: "p1", due: 10).captureDueAt == Self.at(10))
            _ = try await Self.authorized(store, order: "o2", payment: "p2", due: 5)
            #expect(try await Self.authorized(store, order: "o3", payment: "p3", due: nil).captureDueAt == nil)
            #expect(try await store.payment(id: "p1")?.captureDueAt == Self.at(10), "stored with the authorization")
            #expect(try await store.leasePaymentsForCapture(at: Self.at(4), until: Self.at(64), limit: 10).isEmpty)
            let leased = try await store.leasePaymentsForCapture(at: Self.at(10), until: Self.at(70), limit: 10)
            #expect(leased.map(\.id) == ["p2", "p1"] && leased.allSatisfy { $0.captureDueAt == Self.at(70) })
            #expect(try await store.payment(id: "p2")?.captureDueAt == Self.at(70))
            #expect(try await store.leasePaymentsForCapture(at: Self.at(69), until: Self.at(200), limit: 10).isEmpty, "held until then")
            let tie = try await store.leasePaymentsForCapture(at: Self.at(70), until: Self.at(130), limit: 1)
            #expect(tie.map(\.id) == ["p1"], "due at the same time: the older payment first")
            let settled = try #require(try await Self.move(store, "p2", of: "o2", .settle, at: 71))
            let stored = try await store.payment(id: "p2")
            #expect(settled.captureDueAt == nil && stored?.captureDueAt == nil)
            #expect(try await store.leasePaymentsForCapture(at: Self.at(1000), until: Self.at(1060), limit: 10).map(\.id) == ["p1"])
            #expect(try await Self.move(store, "p1", of: "o1", .cancel, at: 1001)?.captureDueAt == nil)
            #expect(try await store.leasePaymentsForCapture(at: Self.at(5000), until: Self.at(5060), limit: 10).isEmpty)
        }
    }

    @Test(
        "a refused capture is a compare-and-set on the refusals seen, the payment authorized and owing one; giving up clears the mark and writes payment.capture_failed once",
        arguments: Kind.enabled)
    func captureRefusals(kind: Kind) async throws {
        try await StoreContractTests.withStore(kind) { store in
            _ = try await Self.authorized(store, order: "o1", payment: "p1", due: 0)
            let first = CaptureRefusal(paymentId: "p1", refusalsBefore: 0, nextAttemptAt: Self.at(60), at: Self.at(1))
            let refused = try #require(try await store.recordCaptureRefusal(first))
            #expect(refused.captureAttempts == 1 && refused.captureDueAt == Self.at(60) && refused.state == .authorized)
            #expect(try await store.recordCaptureRefusal(first) == nil, "decided on no refusal, but there was one")
            let last = CaptureRefusal(paymentId: "p1", refusalsBefore: 1, nextAttemptAt: nil, at: Self.at(61))
            let given = try #require(try await store.recordCaptureRefusal(last))
            #expect(given.captureAttempts == 2 && given.captureDueAt == nil)
            #expect(try await store.payment(id: "p1")?.captureDueAt == nil)
            let again = CaptureRefusal(paymentId: "p1", refusalsBefore: 2, nextAttemptAt: nil, at: Self.at(62))
            #expect(try await store.recordCaptureRefusal(again) == nil, "no capture is owed any more")
            // A payment captured meanwhile: the refusal changes nothing.
            _ = try await Self.authorized(store, order: "o2", payment: "p2", due: 0)
            _ = try #require(try await Self.move(store, "p2", of: "o2", .settle, at: 2))
            let late = CaptureRefusal(paymentId: "p2", refusalsBefore: 0, nextAttemptAt: nil, at: Self.at(3))
            #expect(try await store.recordCaptureRefusal(late) == nil)
            let failed = try await Self.events(store).filter { $0.type == .paymentCaptureFailed }
            #expect(failed.count == 1)
            let event = try #require(failed.first)
            let payment = try #require((try Self.json(event))["data"] as? [String: Any])["payment"] as? [String: Any]
            #expect(payment?["id"] as? String == "p1" && payment?["state"] as? String == "authorized")
            let order = try await store.order(id: "o1")
            #expect(event.merchantIdentifier == order?.merchantIdentifier)
        }
    }

    @Test("a settle records what it captured (a part, or all); refund claims are bounded by it", arguments: Kind.enabled)
    func partialCapture(kind: Kind) async throws {
        try await StoreContractTests.withStore(kind) { store in
            _ = try await Self.authorized(store, order: "o1", payment: "p1", due: nil)
            var settle = PaymentTransition(paymentId: "p1", orderId: "o1", move: PaymentLifecycle.move(.settle), at: Self.at(1))
            settle.amountCaptured = 400
            let settled = try #require(try await store.transition(settle))
            #expect(settled.amountCaptured == 400 && settled.captured == 400)
            #expect(try await store.payment(id: "p1")?.amountCaptured == 400)
            let settledEvent = try #require(try await Self.events(store).last { $0.type == .paymentSettled })
            let shown = try #require((try Self.json(settledEvent))["data"] as? [String: Any])["payment"] as? [String: Any]
            #expect(shown?["amountCaptured"] as? Int == 400)
            #expect(await Self.storeError { _ = try await store.claimRefund(Self.refund("p1", 401, key: "a")) } == .refundTooLarge)
            _ = try await store.claimRefund(Self.refund("p1", 400, key: "b"))
            // A payment settled before Orchard kept what it captured: the whole amount.
            _ = try await Self.settled(store, order: "o2", payment: "p2")
            let whole = try #require(try await store.payment(id: "p2"))
            #expect(whole.amountCaptured == nil && whole.captured == whole.amount)
            _ = try await store.claimRefund(Self.refund("p2", whole.amount, key: "c"))
        }
    }

    /// A released refund of `amount`, as the engine makes it.
    static func released(_ payment: String, _ amount: Int64, key: String) -> RefundRecord {
        var refund = RefundRecord(
            id: "re_" + RecordIdentifier.random(), paymentId: payment, amount: amount, currency: "EUR", state: .refunded,
            reference: "\(payment)-r1", idempotencyKey: key, createdAt: at(2))
        refund.released = true
        return refund
    }

    @Test(
        "a move that releases an uncaptured amount inserts its refund and payment.refunded only if it moves; released amounts bound nothing",
        arguments: Kind.enabled)
    func releasingMove(kind: Kind) async throws {
        try await StoreContractTests.withStore(kind) { store in
            _ = try await Self.authorized(store, order: "o1", payment: "p1", due: 0)
            var settle = PaymentTransition(paymentId: "p1", orderId: "o1", move: PaymentLifecycle.move(.settle), at: Self.at(2))
            settle.amountCaptured = 600
            settle.release = Self.released("p1", 390, key: "k")
            let moved = try #require(try await store.transition(settle))
            #expect(moved.state == .settled && moved.amountCaptured == 600 && moved.captureDueAt == nil)
            let refunds = try await store.refunds(paymentId: "p1")
            #expect(refunds.count == 1 && refunds.first?.released == true && refunds.first?.state == .refunded)
            #expect(try await store.transition(settle) == nil, "moved already: nothing more inserted")
            #expect(try await store.refunds(paymentId: "p1").count == 1)
            let events = try await Self.events(store).map(\.type)
            #expect(Array(events.suffix(2)) == [.paymentSettled, .paymentRefunded])
            let refunded = try #require(try await Self.events(store).last)
            let data = try #require((try Self.json(refunded))["data"] as? [String: Any])
            #expect((data["refund"] as? [String: Any])?["released"] as? Bool == true)
            #expect((data["payment"] as? [String: Any])?["amountRefunded"] as? Int == 390)
            // What was captured (600) bounds the refunds; the released 390 does not count against it.
            #expect(await Self.storeError { _ = try await store.claimRefund(Self.refund("p1", 601, key: "a")) } == .refundTooLarge)
            #expect(try await store.claimRefund(Self.refund("p1", 600, key: "b")).amount == 600)
            // The whole amount: the cancel voids it.
            _ = try await Self.authorized(store, order: "o2", payment: "p2", due: nil)
            var cancel = PaymentTransition(paymentId: "p2", orderId: "o2", move: PaymentLifecycle.move(.cancel), at: Self.at(3))
            cancel.release = Self.released("p2", 990, key: "w")
            #expect(try await store.transition(cancel)?.state == .cancelled)
            #expect(try await store.order(id: "o2")?.state == .cancelled)
            #expect(try await store.refunds(paymentId: "p2").map(\.released) == [true])
        }
    }
}
