import ApplePay
import Foundation
import OrchardCore
import Testing

/// The store's part in asking before re-sending, on every store: the time of a reference's last
/// send is kept, a re-send is a compare-and-set on the send count the processor was asked about,
/// a processor's pending answer keeps its reference, and an unknown refund is settled from the
/// processor's records or kept aside until it is asked again.
extension ShopStoreContractTests {
    @Test(
        "a re-send finds the send count it was decided on and records its time; a pending answer keeps the processor's reference",
        arguments: Kind.enabled)
    func resendCompareAndSet(kind: Kind) async throws {
        try await StoreContractTests.withStore(kind) { store in
            try await store.insert(try StoreContractTests.order("o1"))
            var first = Self.claim("o1", payment: "p1")
            first.draft.lastSentAt = Self.at(0)
            #expect(try await store.claimPayment(first).lastSentAt == Self.at(0))
            let pending = PaymentTransition(
                paymentId: "p1", orderId: "o1", move: PaymentLifecycle.move(.processorPending), at: Self.at(1),
                outcome: AuthorizationOutcome(status: .pending, processorReference: "wl-3000000001_0", code: "REDIRECTED"))
            let unknown = try #require(try await store.transition(pending))
            #expect(unknown.state == .unknown && unknown.processorReference == "wl-3000000001_0" && unknown.processorCode == "REDIRECTED")
            #expect(unknown.lastSentAt == Self.at(0) && unknown.sentLast == Self.at(0), "an answer is no send")

            var stale = Self.claim("o1", payment: "p2", at: 5)
            stale.expectedSends = 2
            stale.resending = "p1"
            #expect(await Self.storeError { _ = try await store.claimPayment(stale) } == .paymentInProgress)
            #expect(try await store.payment(id: "p1")?.state == .unknown, "the refused claim changed nothing")
            #expect(try await store.order(id: "o1")?.state == .unknown)
            var retry = Self.claim("o1", payment: "p3", at: 6)
            retry.expectedSends = 1
            retry.resending = "p1"
            let resent = try await store.claimPayment(retry)
            #expect(resent.id == "p1" && resent.sends == 2 && resent.lastSentAt == Self.at(6))

            try #require(try await Self.move(store, "p1", of: "o1", .noAnswer, at: 7) != nil)
            let racing = PaymentTransition(
                paymentId: "p1", orderId: "o1", move: PaymentLifecycle.move(.resend), at: Self.at(8), countsReconcileAttempt: true,
                expectedSends: 1)
            #expect(try await store.transition(racing) == nil, "decided on one send, but it was sent twice")
            var current = racing
            current.expectedSends = 2
            let reconciled = try #require(try await store.transition(current))
            #expect(reconciled.sends == 3 && reconciled.lastSentAt == Self.at(8))
            #expect(try await store.payment(id: "p1")?.lastSentAt == Self.at(8), "kept")
            try #require(try await Self.move(store, "p1", of: "o1", .noAnswer, at: 9) != nil)

            let queried = PaymentTransition(
                paymentId: "p1", orderId: "o1", move: PaymentLifecycle.move(.queriedAuthorized), at: Self.at(10),
                outcome: AuthorizationOutcome(
                    status: .authorized, processorReference: "wl-3000000001_0", links: ["settle": "https://psp/s"]))
            let paid = try #require(try await store.transition(queried))
            #expect(paid.state == .authorized && paid.sends == 3 && paid.links["settle"] == "https://psp/s")
            #expect(try await store.order(id: "o1")?.state == .paid)
            #expect(try await store.retryPayload(paymentId: "p1") == nil)
            let types = try await Self.events(store).map(\.type)
            #expect(types == [.paymentUnknown, .paymentAuthorized], "unknown once, then what the processor's records said")
        }
    }

    @Test(
        "an unknown refund: settled from the processor's records (only from unknown), or kept from the reconciler until asked again",
        arguments: Kind.enabled)
    func unknownRefundSettledOrDeferred(kind: Kind) async throws {
        try await StoreContractTests.withStore(kind) { store in
            _ = try await Self.settled(store)
            let first = try await store.claimRefund(Self.refund("p1", 400, key: "a", at: 1))
            #expect(first.lastSentAt == Self.at(1))
            #expect(try await store.deferRefund(id: first.id, until: Self.at(100)) == false, "only an unknown refund is kept aside")
            _ = try #require(try await store.finishRefund(id: first.id, state: .unknown, outcome: nil, at: Self.at(2)))
            #expect(try await store.refunds(paymentId: "p1").first?.sentLast == Self.at(1))

            #expect(try await store.deferRefund(id: first.id, until: Self.at(100)))
            let before = try await store.leaseRefundsToReconcile(
                at: Self.at(99), until: Self.at(120), pendingBefore: Self.at(0), maximumSends: 8, limit: 10)
            #expect(before.isEmpty, "kept aside until it is asked again")
            let due = try await store.leaseRefundsToReconcile(
                at: Self.at(100), until: Self.at(120), pendingBefore: Self.at(0), maximumSends: 8, limit: 10)
            #expect(due.map(\.id) == [first.id])

            let events = try await Self.events(store).count
            let outcome = RefundOutcome(status: .refunded, processorReference: "psp-r1", code: "REFUNDED")
            #expect(try await store.finishRefund(id: first.id, from: .pending, state: .refunded, outcome: outcome, at: Self.at(101)) == nil)
            let settled = try #require(
                try await store.finishRefund(id: first.id, from: .unknown, state: .refunded, outcome: outcome, at: Self.at(101)))
            #expect(settled.state == .refunded && settled.sends == 1 && settled.processorReference == "psp-r1")
            #expect(try await store.finishRefund(id: first.id, from: .unknown, state: .refused, outcome: nil, at: Self.at(102)) == nil)
            #expect(try await Self.events(store).dropFirst(events).map(\.type) == [.paymentRefunded])
        }
    }
}
