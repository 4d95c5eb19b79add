import Foundation
import OrchardCore
import Testing

/// A move given the payment as the engine holds it (``PaymentTransition/held``), on every store:
/// the copy may save a store its read, but the stored payment decides. A copy that differs from
/// it changes nothing of what is written or reported, and a copy of a payment that has moved on
/// moves nothing.
extension ShopStoreContractTests {
    @Test("a move given a copy of the payment that differs writes and reports the payment as stored", arguments: Kind.enabled)
    func heldCopyDiffers(kind: Kind) async throws {
        try await StoreContractTests.withStore(kind) { store in
            let (request, order) = try Self.request("r1", key: "k1")
            _ = try await store.createPaymentRequest(request, order: order)
            let claimed = try await store.claimPayment(Self.claim("r1", payment: "p1"))
            var copy = claimed
            copy.amount = 1
            copy.reference = "forged"
            copy.processorMessage = "forged"
            copy.links = ["forged": "https://example.com"]
            let moved = try #require(
                try await store.transition(
                    PaymentTransition(
                        paymentId: "p1", orderId: "r1", move: PaymentLifecycle.move(.authorized), at: Self.at(1),
                        outcome: AuthorizationOutcome(status: .authorized, processorReference: "psp-p1"), held: copy)))
            #expect(moved.amount == claimed.amount && moved.reference == claimed.reference && moved.links == [:])
            #expect(moved.state == .authorized && moved.processorReference == "psp-p1")
            #expect(try await store.payment(id: "p1") == moved)
            let event = try #require(try await Self.events(store).last)
            #expect(event.type == .paymentAuthorized && event.merchantIdentifier == request.merchantIdentifier)
            let data = try #require(try Self.json(event)["data"] as? [String: Any])
            let payment = try #require(data["payment"] as? [String: Any])
            #expect(payment["amount"] as? Int == Int(claimed.amount) && payment["reference"] as? String == "shop-r1")
            #expect(payment["processorReference"] as? String == "psp-p1")
        }
    }

    @Test("a move given a copy of a payment that has moved on moves nothing", arguments: Kind.enabled)
    func heldCopyOutdated(kind: Kind) async throws {
        try await StoreContractTests.withStore(kind) { store in
            try await store.insert(try StoreContractTests.order("o1"))
            let claimed = try await store.claimPayment(Self.claim("o1", payment: "p1"))
            let unknown = try #require(try await Self.move(store, "p1", of: "o1", .noAnswer, at: 1))
            let events = try await Self.events(store).count
            let late = PaymentTransition(
                paymentId: "p1", orderId: "o1", move: PaymentLifecycle.move(.declined), at: Self.at(2), held: claimed)
            #expect(try await store.transition(late) == nil, "the copy is pending; the payment is unknown")
            #expect(try await store.payment(id: "p1") == unknown)
            #expect(try await store.order(id: "o1")?.state == .unknown)

            // A re-send decided on one send, given a copy that says so, after a second send.
            var resend = Self.claim("o1", payment: "p2", at: 3)
            resend.resending = "p1"
            resend.expectedSends = 1
            _ = try await store.claimPayment(resend)
            let unknownAgain = try #require(try await Self.move(store, "p1", of: "o1", .noAnswer, at: 4))
            let racing = PaymentTransition(
                paymentId: "p1", orderId: "o1", move: PaymentLifecycle.move(.resend), at: Self.at(5), countsReconcileAttempt: true,
                expectedSends: 1, held: unknown)
            #expect(try await store.transition(racing) == nil, "sent twice since")
            #expect(try await store.payment(id: "p1") == unknownAgain)
            #expect(try await Self.events(store).count == events, "nothing reported")
        }
    }
}
