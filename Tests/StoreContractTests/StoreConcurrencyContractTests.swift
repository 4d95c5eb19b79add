import Foundation
import OrchardCore
import Testing

/// What several instances sharing one store rely on: calls made at the same moment (on
/// PostgreSQL, on separate connections) never hand one item to two callers, never apply one
/// move twice, never let money past its limit.
@Suite("Store contract under concurrency: SQLite, in memory and PostgreSQL")
struct StoreConcurrencyContractTests {
    typealias Kind = StoreContractTests.Kind
    typealias Shop = ShopStoreContractTests

    /// Runs `work` `count` times at once and collects what each returned.
    static func concurrently<T: Sendable>(_ count: Int, _ work: @escaping @Sendable (Int) async throws -> T) async throws -> [T] {
        try await withThrowingTaskGroup(of: T.self) { group in
            for index in 0..<count { group.addTask { try await work(index) } }
            var results: [T] = []
            for try await result in group { results.append(result) }
            return results
        }
    }

    /// Opens connections first (PostgreSQL), so the calls under test overlap rather than queue
    /// behind connection setup.
    static func warm(_ store: any OrchardStore) async throws {
        _ = try await concurrently(8) { _ in try await store.webhookEvent(id: "evt_none") }
    }

    /// Authorizes `count` payments, one a second from now: one payment.authorized event each; their IDs.
    static func authorizedEvents(_ store: any OrchardStore, count: Int) async throws -> [String] {
        for index in 0..<count {
            try await store.insert(try StoreContractTests.order("o\(index)"))
            _ = try await store.claimPayment(Shop.claim("o\(index)", payment: "p\(index)", at: index))
            _ = try #require(try await Shop.move(store, "p\(index)", of: "o\(index)", .authorized, at: index))
        }
        let events = try await store.webhookEvents(merchantIdentifier: nil, state: .pending, limit: count + 1)
        #expect(events.count == count)
        return events.map(\.id)
    }

    /// Checks that the calls' leases are disjoint and, with what one more call finds, cover `all`.
    static func expectEachLeasedOnce(_ leases: [[String]], rest: [String], all: [String], sourceLocation: SourceLocation = #_sourceLocation)
    {
        let taken = leases.flatMap { $0 }
        #expect(Set(taken).count == taken.count, "no item went to two callers", sourceLocation: sourceLocation)
        #expect(Set(taken).isDisjoint(with: rest), sourceLocation: sourceLocation)
        #expect((taken + rest).sorted() == all.sorted(), "every due item was leased exactly once", sourceLocation: sourceLocation)
    }

    @Test("concurrent leases of due webhook events hand each event to one caller", arguments: Kind.enabled)
    func webhookLeases(kind: Kind) async throws {
        try await StoreContractTests.withStore(kind) { store in
            let all = try await Self.authorizedEvents(store, count: 60)
            try await Self.warm(store)
            let leases = try await Self.concurrently(8) { _ in
                try await store.leaseWebhookEvents(at: Shop.at(100), until: Shop.at(160), limit: 6).map(\.id)
            }
            let rest = try await store.leaseWebhookEvents(at: Shop.at(100), until: Shop.at(160), limit: 100).map(\.id)
            Self.expectEachLeasedOnce(leases, rest: rest, all: all)
            #expect(try await store.leaseWebhookEvents(at: Shop.at(159), until: Shop.at(219), limit: 100).isEmpty)
            let again = try await store.leaseWebhookEvents(at: Shop.at(160), until: Shop.at(220), limit: 100)
            #expect(again.map(\.id).sorted() == all.sorted(), "expired leases are handed out again, under the same event IDs")
            #expect(again.allSatisfy { $0.attempts == 0 && $0.state == .pending })
        }
    }

    @Test("concurrent leases of unknown payments due for a re-send hand each payment to one caller", arguments: Kind.enabled)
    func paymentLeases(kind: Kind) async throws {
        try await StoreContractTests.withStore(kind) { store in
            var all: [String] = []
            for index in 0..<60 {
                try await store.insert(try StoreContractTests.order("o\(index)"))
                _ = try await store.claimPayment(Shop.claim("o\(index)", payment: "p\(index)", at: index))
                let unknown = try await store.transition(
                    PaymentTransition(
                        paymentId: "p\(index)", orderId: "o\(index)", move: PaymentLifecycle.move(.noAnswer), at: Shop.at(index),
                        nextReconcileAt: Shop.at(30 + index)))
                #expect(unknown?.state == .unknown)
                all.append("p\(index)")
            }
            try await Self.warm(store)
            let leases = try await Self.concurrently(8) { _ in
                try await store.leasePaymentsForReconciliation(at: Shop.at(100), until: Shop.at(160), limit: 6).map(\.id)
            }
            let rest = try await store.leasePaymentsForReconciliation(at: Shop.at(100), until: Shop.at(160), limit: 100).map(\.id)
            Self.expectEachLeasedOnce(leases, rest: rest, all: all)
            #expect(try await store.leasePaymentsForReconciliation(at: Shop.at(159), until: Shop.at(219), limit: 100).isEmpty)
            let again = try await store.leasePaymentsForReconciliation(at: Shop.at(160), until: Shop.at(220), limit: 5).map(\.id)
            #expect(again.count == 5 && Set(again).isSubset(of: all), "expired leases are handed out again")
        }
    }

    @Test("concurrent leases of refunds to reconcile hand each refund to one caller", arguments: Kind.enabled)
    func refundLeases(kind: Kind) async throws {
        try await StoreContractTests.withStore(kind) { store in
            _ = try await Shop.settled(store)
            var all: [String] = []
            for index in 0..<40 {
                let refund = try await store.claimRefund(Shop.refund("p1", 10, key: "k\(index)", at: index))
                #expect(try await store.finishRefund(id: refund.id, state: .unknown, outcome: nil, at: Shop.at(index))?.state == .unknown)
                all.append(refund.id)
            }
            try await Self.warm(store)
            let leases = try await Self.concurrently(8) { _ in
                try await store.leaseRefundsToReconcile(
                    at: Shop.at(100), until: Shop.at(160), pendingBefore: Shop.at(70), maximumSends: 8, limit: 5
                ).map(\.id)
            }
            let rest = try await store.leaseRefundsToReconcile(
                at: Shop.at(100), until: Shop.at(160), pendingBefore: Shop.at(70), maximumSends: 8, limit: 100
            ).map(\.id)
            Self.expectEachLeasedOnce(leases, rest: rest, all: all)
            let again = try await store.leaseRefundsToReconcile(
                at: Shop.at(160), until: Shop.at(220), pendingBefore: Shop.at(130), maximumSends: 8, limit: 100)
            #expect(again.map(\.id) == all, "expired leases are handed out again, least recently changed first")
        }
    }

    @Test("concurrent expiry passes close each order once, with one payment_request.expired event each", arguments: Kind.enabled)
    func concurrentExpiry(kind: Kind) async throws {
        try await StoreContractTests.withStore(kind) { store in
            var all: [String] = []
            for index in 0..<40 {
                let (request, order) = try Shop.request("r\(index)", key: "k\(index)", expiresIn: 10 + index)
                _ = try await store.createPaymentRequest(request, order: order)
                all.append(request.id)
            }
            try await Self.warm(store)
            let passes = try await Self.concurrently(8) { _ in try await store.expireOrders(at: Shop.at(100), limit: 4) }
            let rest = try await store.expireOrders(at: Shop.at(100), limit: 100)
            Self.expectEachLeasedOnce(passes, rest: rest, all: all)
            let events = try await Shop.events(store)
            #expect(events.count == 40 && events.allSatisfy { $0.type == .paymentRequestExpired })
            for id in all { #expect(try await store.order(id: id)?.state == .expired) }
        }
    }

    @Test(
        "50 concurrent claims of one transaction ID: exactly one succeeds, every other is duplicateTransaction or paymentInProgress",
        arguments: Kind.enabled)
    func concurrentClaims(kind: Kind) async throws {
        try await StoreContractTests.withStore(kind) { store in
            try await store.insert(try StoreContractTests.order("o1"))
            for index in 0..<50 { try await store.insert(try StoreContractTests.order("other\(index)")) }
            // The same token sent 50 times for one order, and once each for 50 other orders.
            let sameOrder = try await Self.concurrently(50) { index in
                await Self.outcome { try await store.claimPayment(StoreContractTests.claim("o1", transaction: "tx", payment: "p\(index)")) }
            }
            let otherOrders = try await Self.concurrently(50) { index in
                await Self.outcome {
                    try await store.claimPayment(StoreContractTests.claim("other\(index)", transaction: "tx2", payment: "q\(index)"))
                }
            }
            for outcomes in [sameOrder, otherOrders] {
                #expect(outcomes.filter { $0 == nil }.count == 1, "exactly one claim succeeds")
                #expect(outcomes.compactMap { $0 }.allSatisfy { $0 == .replayedPayment || $0 == .paymentInProgress }, "\(outcomes)")
            }
            #expect(try await store.payments(orderId: "o1").count == 1)
            // Different tokens for one open order at once: one attempt, the others told it is in progress.
            try await store.insert(try StoreContractTests.order("o2"))
            let tokens = try await Self.concurrently(20) { index in
                await Self.outcome {
                    try await store.claimPayment(StoreContractTests.claim("o2", transaction: "u\(index)", payment: "s\(index)"))
                }
            }
            #expect(tokens.filter { $0 == nil }.count == 1 && tokens.compactMap { $0 }.allSatisfy { $0 == .paymentInProgress }, "\(tokens)")
            #expect(try await store.payments(orderId: "o2").count == 1)
            var claimed = 0
            for index in 0..<50 { claimed += try await store.payments(orderId: "other\(index)").count }
            #expect(claimed == 1, "one payment among the other orders")
            // New tokens for o1 while its one attempt is with the processor: none gets through.
            let retries = try await Self.concurrently(20) { index in
                await Self.outcome {
                    try await store.claimPayment(StoreContractTests.claim("o1", transaction: "t\(index)", payment: "r\(index)"))
                }
            }
            #expect(retries.allSatisfy { $0 == .paymentInProgress })
        }
    }

    /// Nil when `body` succeeded, else the refusal's code; a store failure is an issue (and
    /// `.invalidState`, which no claim expects).
    static func outcome(_ body: () async throws -> PaymentRecord) async -> CoreError.Code? {
        do {
            _ = try await body()
            return nil
        } catch let refusal as CoreError {
            return refusal.code
        } catch {
            Issue.record("the store failed: \(error)")
            return .invalidState
        }
    }

    @Test("concurrent refunds never pass the payment; concurrent moves apply once and report once", arguments: Kind.enabled)
    func concurrentMoney(kind: Kind) async throws {
        try await StoreContractTests.withStore(kind) { store in
            _ = try await Shop.settled(store)  // 990
            let refunds = try await Self.concurrently(10) { index in
                do {
                    return try await store.claimRefund(Shop.refund("p1", 200, key: "k\(index)")).amount
                } catch {
                    #expect((error as? CoreError)?.code == .refundTooLarge)
                    return 0
                }
            }
            #expect(refunds.filter { $0 > 0 }.count == 4, "four of 200 fit in 990, a fifth does not")
            #expect(try await store.refunds(paymentId: "p1").map(\.reference).sorted() == (1...4).map { "o1-1-r\($0)" })

            try await store.insert(try StoreContractTests.order("o2"))
            _ = try await store.claimPayment(Shop.claim("o2", payment: "p2"))
            let before = try await Shop.events(store).count
            let moves = try await Self.concurrently(10) { _ in try await Shop.move(store, "p2", of: "o2", .authorized, at: 5) }
            #expect(moves.compactMap { $0 }.count == 1, "one move applies")
            #expect(try await Shop.events(store).count == before + 1, "one payment.authorized")
        }
    }
}
