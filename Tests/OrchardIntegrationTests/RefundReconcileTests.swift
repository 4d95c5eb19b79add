import CurlClient
import Foundation
import OrchardCore
import OrchardIntegrationTesting
import OrchardServerTesting
import OrchardTesting
import Synchronization
import Testing

/// Refunds the shop never retried are still settled: the reconciler re-sends unknown refunds
/// under their own reference, and turns a refund left pending by a failed write unknown first.
@Suite("The reconciler finishes unknown and abandoned refunds")
struct RefundReconcileTests {
    /// The payment's refund once the store shows it in `state`.
    func wait(_ fixture: ProcessorFixture, payment: String, for state: RefundState) async throws -> RefundRecord? {
        try await Eventually.value {
            try await fixture.server.store.refunds(paymentId: payment).first.flatMap { $0.state == state ? $0 : nil }
        }
    }

    @Test(
        "a refund the processor did not answer is asked about and re-sent in the background, and refunds once",
        arguments: [
            ProcessorFixture.Kind.worldpay, .worldlineEncrypted,
        ])
    func unknownIsResent(kind: ProcessorFixture.Kind) async throws {
        try await ProcessorFixture.with(kind, admin: true, reconcileEverySecond: true) { fixture in
            let settled = try await SettledPayment.make(fixture)
            let key = try await fixture.server.apiKey()
            fixture.mock.refundBehaviour = .status(503)
            let answer = try await fixture.server.api(
                "POST", "/v1/payments/\(settled.payment.id)/refunds", key: key, json: #"{"amount": 400}"#, idempotencyKey: "r-1")
            #expect(answer.status == 202)
            #expect(answer.json?["state"] as? String == "unknown")
            fixture.mock.refundBehaviour = .accept
            // Worldpay does not know the refund: re-sent once Payment Queries' lag has passed.
            if kind == .worldpay { fixture.clock.advance(61) }
            let refund = try #require(try await wait(fixture, payment: settled.payment.id, for: .refunded))
            #expect(refund.state == .refunded)
            #expect(refund.sends == 2, "one re-send, under the same reference")
            #expect(settled.refunded == [400], "refunded once")
        }
    }

    @Test("a refund whose answer could not be written stays pending, then is found unknown and settled from Worldline's records")
    func abandonedPending() async throws {
        nonisolated(unsafe) var failing: FailingRefunds?
        // 3 s: nothing here waits on the processor's timeout, and at 1 s the first payment's own
        // answer could miss it on a loaded machine (seen once in a full suite run).
        try await ProcessorFixture.with(
            .worldlineEncrypted, timeout: 3000, admin: true,
            repositories: { repositories in
                var repositories = repositories
                let refunds = FailingRefunds(repositories.refunds)
                failing = refunds
                repositories.refunds = refunds
                return repositories
            }, reconcileEverySecond: true
        ) { fixture in
            let settled = try await SettledPayment.make(fixture)
            let key = try await fixture.server.apiKey()
            let store = try #require(failing)
            store.failing.store(true, ordering: .relaxed)
            let answer = try await fixture.server.api(
                "POST", "/v1/payments/\(settled.payment.id)/refunds", key: key, json: #"{"amount": 250}"#, idempotencyKey: "r-2")
            #expect(answer.status == 504)
            store.failing.store(false, ordering: .relaxed)
            #expect(try await fixture.server.store.refunds(paymentId: settled.payment.id).first?.state == .pending)
            #expect(settled.refunded == [250], "the processor refunded; only the write failed")
            // Pending longer than the processor's timeout + 5 s: unknown, then re-sent.
            let refund = try #require(try await wait(fixture, payment: settled.payment.id, for: .refunded))
            #expect(refund.state == .refunded)
            #expect(refund.sends == 1, "GetRefunds shows Worldline took it: settled without a re-send")
            #expect(settled.refunded == [250], "refunded once")
        }
    }
}
