import Foundation
import Logging
import OrchardCore
import OrchardTesting
import Synchronization
import Testing

@testable import OrchardPostgres

/// The authorization path's round trips on PostgreSQL, counted by the store's own helpers (every
/// statement it sends on its own, and every transaction it begins): a claim given what the order's
/// read kept only writes (alone, it reads and writes), a move given the payment the engine holds
/// only writes, neither opens a transaction.
@Suite("PostgreSQL store: an order's read, its claim and its move take a round trip each")
struct PostgresRoundTripTests {
    typealias Shop = ShopStoreContractTests

    static func withStore(_ body: (PostgresStore) async throws -> Void) async throws {
        try await PostgresServer.shared().withDatabase { settings in
            let store = try await PostgresStore.open(settings, logger: Logger(label: "orchard.test"), eventLoops: PostgresServer.storeLoops)
            try await store.withRunning { try await body($0) }
        }
    }

    /// What `body` returned and the round trips it took; a transaction (BEGIN, at least one
    /// statement, COMMIT) is an issue, as no step of an authorization needs one.
    static func counted<T>(_ store: PostgresStore, sourceLocation: SourceLocation = #_sourceLocation, _ body: () async throws -> T)
        async rethrows -> (T, Int)
    {
        let before = (store.roundTrips.load(ordering: .relaxed), store.transactions.load(ordering: .relaxed))
        let result = try await body()
        #expect(store.transactions.load(ordering: .relaxed) == before.1, "no transaction", sourceLocation: sourceLocation)
        return (result, store.roundTrips.load(ordering: .relaxed) - before.0)
    }

    @Test("a first claim, its authorizing move with a mandate, a re-send's claim and its move", .enabled(if: PostgresServer.enabled))
    func authorization() async throws {
        try await Self.withStore { store in
            try await store.insert(try StoreContractTests.order("o1"))
            let (claimed, claimTrips) = try await Self.counted(store) { try await store.claimPayment(Shop.claim("o1", payment: "p1")) }
            #expect(claimed.reference == "o1-1" && claimed.state == .pending)
            #expect(claimTrips == 2, "a claim reads, then writes")

            let mandate = MandateStoreContractTests.mandate("mdt_1", payment: "p1", order: "o1", token: nil)
            let (moved, moveTrips) = try await Self.counted(store) {
                try await store.transition(
                    PaymentTransition(
                        paymentId: "p1", orderId: "o1", move: PaymentLifecycle.move(.authorized), at: Shop.at(5),
                        outcome: AuthorizationOutcome(status: .authorized, processorReference: "psp-p1"), mandate: mandate,
                        held: claimed))
            }
            #expect(moveTrips == 1, "a move given the payment only writes")
            let payment = try #require(moved)
            #expect(payment.state == .authorized && payment.processorReference == "psp-p1" && payment.mandateId == "mdt_1")
            #expect(try await store.payment(id: "p1") == payment, "the move returns the payment as stored")
            #expect(try await store.mandate(id: "mdt_1") == mandate)
            let events = try await Shop.events(store)
            #expect(events.map(\.type) == [.paymentAuthorized, .mandateCreated], "both events, in the order they happened")
            let view = try #require(try Shop.json(events[0])["data"] as? [String: Any])
            #expect((view["payment"] as? [String: Any])?["processorReference"] as? String == "psp-p1", "the event shows the moved payment")

            // The same move again finds the payment moved: one read, nothing written.
            let (again, againTrips) = try await Self.counted(store) {
                try await Shop.move(store, "p1", of: "o1", .authorized, at: 6)
            }
            #expect(again == nil && againTrips == 1)
            let (late, lateTrips) = try await Self.counted(store) {
                try await store.transition(
                    PaymentTransition(paymentId: "p1", orderId: "o1", move: PaymentLifecycle.move(.declined), at: Shop.at(7), held: claimed)
                )
            }
            #expect(late == nil && lateTrips == 1, "given the payment as it was: one write, which finds the order moved")
            #expect(try await Shop.events(store).count == 2)
        }
    }

    /// A claim given `basis`, counted.
    static func claim(
        _ store: PostgresStore, _ claim: PaymentClaim, basis: PaymentClaimBasis?, sourceLocation: SourceLocation = #_sourceLocation
    ) async throws -> (PaymentRecord, Int) {
        var claim = claim
        claim.basis = basis
        return try await Self.counted(store, sourceLocation: sourceLocation) { try await store.claimPayment(claim) }
    }

    @Test(
        "the order read for its claim: the claim only writes; a basis the order has moved from is read again, and refused as without it",
        .enabled(if: PostgresServer.enabled))
    func claimBasis() async throws {
        try await Self.withStore { store in
            try await store.insert(try StoreContractTests.order("o1"))
            let (read, readTrips) = try await Self.counted(store) { try await store.claimableOrder(id: "o1", remembered: false) }
            let first = try #require(read?.basis)
            let stored = try await store.order(id: "o1")
            #expect(readTrips == 1 && read?.order == stored)
            #expect(
                first.snapshot
                    == PaymentClaimSnapshot(
                        order: .init(state: .open, priceVersion: 1, expiresAt: read?.order.expiresAt), transactionUsed: false,
                        unknownAttempt: nil, attempts: 0))
            let (claimed, trips) = try await Self.claim(store, Shop.claim("o1", payment: "p1"), basis: first)
            #expect(claimed.reference == "o1-1" && claimed.state == .pending && trips == 1, "one write, no read")

            // The same basis once the order is pending: the write finds the order moved, changes
            // nothing, and the read's decision is reported.
            let error = await Shop.storeError { _ = try await Self.claim(store, Shop.claim("o1", payment: "p2", at: 1), basis: first) }
            #expect(error == .paymentInProgress || error == .orderNotOpen, "\(String(describing: error))")
            #expect(try await store.payments(orderId: "o1").map(\.id) == ["p1"])

            // Unknown, then read again: the basis names the unknown attempt; its re-send only writes.
            _ = try #require(try await Shop.move(store, "p1", of: "o1", .noAnswer, at: 2))
            let unknown = try #require(try await store.claimableOrder(id: "o1", remembered: false)?.basis)
            #expect(unknown.snapshot.unknownAttempt == .init(id: "p1", sends: 1) && unknown.snapshot.attempts == 1)
            var resend = Shop.claim("o1", payment: "p3", at: 3)
            resend.resending = "p1"
            resend.expectedSends = 1
            let (resent, resendTrips) = try await Self.claim(store, resend, basis: unknown)
            #expect(resent.id == "p1" && resent.sends == 2 && resendTrips == 1)

            // A token another order used since its order was read: the write finds the ID taken,
            // and the claim is refused as a replay, with nothing written.
            try await store.insert(try StoreContractTests.order("o2"))
            let second = try #require(try await store.claimableOrder(id: "o2", remembered: false)?.basis)
            let (_, replayTrips) = await Self.counted(store) {
                let error = await Shop.storeError {
                    var replay = StoreContractTests.claim("o2", transaction: "t-p3-3", payment: "p4")
                    replay.basis = second
                    _ = try await store.claimPayment(replay)
                }
                #expect(error == .replayedPayment)
            }
            #expect(replayTrips == 2, "the write, then the read that decides")
            let untouched = try await store.order(id: "o2")
            #expect(try await store.payments(orderId: "o2").isEmpty && untouched?.state == .open)

            // Repriced since the read: the write finds another row version; the claim at the old
            // price is refused, and at the new one (read again) it goes through.
            let order = try #require(try await store.order(id: "o2"))
            try await store.updateOpen(try PriceVersionContractTests.dearer(order))
            let stale = await Shop.storeError { _ = try await Self.claim(store, Shop.claim("o2", payment: "p5"), basis: second) }
            #expect(stale == .orderChanged)
            let fresh = try #require(try await store.claimableOrder(id: "o2", remembered: false))
            var current = Shop.claim("o2", payment: "p5")
            current.priceVersion = fresh.order.priceVersion
            let (paid, paidTrips) = try await Self.claim(store, current, basis: fresh.basis)
            #expect(paid.reference == "o2-1" && paid.amount == current.draft.amount && paidTrips == 1)
        }
    }

    @Test(
        "an order this store wrote is claimed in one round trip and no read; one another instance changed since is refused as changed, with nothing written",
        .enabled(if: PostgresServer.enabled))
    func rememberedOrders() async throws {
        try await Self.withTwoInstances { store, other in try await Self.remembered(store, other: other) }
    }

    /// Two stores on one fresh database, as two instances of Orchard: `body(store, other)`.
    static func withTwoInstances(_ body: (PostgresStore, PostgresStore) async throws -> Void) async throws {
        try await PostgresServer.shared().withDatabase { settings in
            let logger = Logger(label: "orchard.test")
            let other = try await PostgresStore.open(settings, logger: logger, eventLoops: PostgresServer.storeLoops)
            try await other.withRunning { other in
                let store = try await PostgresStore.open(settings, logger: logger, eventLoops: PostgresServer.storeLoops)
                try await store.withRunning { store in try await body(store, other) }
            }
        }
    }

    /// `store` claims orders it wrote; `other`, another instance on the same database, changes one.
    static func remembered(_ store: PostgresStore, other: PostgresStore) async throws {
        let order = try StoreContractTests.order("o1")
        try await store.insert(order)
        let (kept, keptTrips) = try await Self.counted(store) { try await store.claimableOrder(id: "o1", remembered: true) }
        let read = try await other.claimableOrder(id: "o1", remembered: true)
        #expect(keptTrips == 0 && kept?.remembered == true && read?.remembered == false, "the other instance reads it")
        #expect(kept?.order == read?.order && kept?.basis?.version == read?.basis?.version, "as a read returns it")
        #expect(kept?.basis?.snapshot == read?.basis?.snapshot)
        let (claimed, trips) = try await Self.claim(store, Shop.claim("o1", payment: "p1"), basis: kept?.basis)
        #expect(claimed.reference == "o1-1" && trips == 1)
        let (after, afterTrips) = try await Self.counted(store) { try await store.claimableOrder(id: "o1", remembered: true) }
        #expect(after?.remembered == false && after?.order.state == .pending && afterTrips == 1, "a claimed order is read")

        // Repriced by the other instance: the remembered basis is stale; the claim is refused as
        // changed in one round trip, writes nothing, and the engine's read then pays the new price.
        try await store.insert(try StoreContractTests.order("o2"))
        let stale = try #require(try await store.claimableOrder(id: "o2", remembered: true))
        let original = try #require(try await other.order(id: "o2"))
        try await other.updateOpen(try PriceVersionContractTests.dearer(original))
        let (_, refusedTrips) = await Self.counted(store) {
            let error = await Shop.storeError { _ = try await Self.claim(store, Shop.claim("o2", payment: "p2"), basis: stale.basis) }
            #expect(error == .orderChanged)
        }
        let unpaid = try await store.payments(orderId: "o2")
        #expect(refusedTrips == 1 && unpaid.isEmpty)
        let fresh = try #require(try await store.claimableOrder(id: "o2", remembered: false))
        var current = Shop.claim("o2", payment: "p2")
        current.priceVersion = fresh.order.priceVersion
        #expect(try await Self.claim(store, current, basis: fresh.basis).0.reference == "o2-1")

        // Repriced by this store: remembered at its new version, with the attempts it has.
        try await store.insert(try StoreContractTests.order("o3"))
        let third = try #require(try await store.order(id: "o3"))
        let dearer = try PriceVersionContractTests.dearer(third)
        try await store.updateOpen(dearer)
        let repriced = try #require(try await store.claimableOrder(id: "o3", remembered: true))
        #expect(repriced.remembered && repriced.order.priceVersion == 2 && repriced.order.priced == dearer.priced)
        var claim = Shop.claim("o3", payment: "p3")
        claim.priceVersion = 2
        let (paid, paidTrips) = try await Self.claim(store, claim, basis: repriced.basis)
        #expect(paid.reference == "o3-1" && paidTrips == 1)
    }

    @Test("a re-send of an unknown attempt: two round trips for its claim, one for its move", .enabled(if: PostgresServer.enabled))
    func resend() async throws {
        try await Self.withStore { store in
            try await store.insert(try StoreContractTests.order("o1"))
            _ = try await store.claimPayment(Shop.claim("o1", payment: "p1"))
            _ = try #require(try await Shop.move(store, "p1", of: "o1", .noAnswer, at: 1))
            var claim = Shop.claim("o1", payment: "p2", at: 2)
            claim.resending = "p1"
            claim.expectedSends = 1
            let (resent, claimTrips) = try await Self.counted(store) { try await store.claimPayment(claim) }
            #expect(resent.id == "p1" && resent.sends == 2 && resent.state == .pending && resent.reference == "o1-1")
            #expect(claimTrips == 2)
            let (moved, moveTrips) = try await Self.counted(store) {
                try await store.transition(
                    PaymentTransition(paymentId: "p1", orderId: "o1", move: PaymentLifecycle.move(.declined), at: Shop.at(3), held: resent))
            }
            #expect(moved?.state == .refused && moveTrips == 1)
            #expect(try await store.retryPayload(paymentId: "p1") == nil, "a resolved payment keeps no request to re-send")
        }
    }

    @Test(
        "a move reads first when the engine holds no payment, or one that differs, or the order's context differs",
        .enabled(if: PostgresServer.enabled))
    func guesses() async throws {
        try await Self.withStore { store in
            let (request, order) = try Shop.request("r1", key: "k1")
            _ = try await store.createPaymentRequest(request, order: order)
            let claimed = try await store.claimPayment(Shop.claim("r1", payment: "p1"))
            var stale = claimed
            stale.amount = 1
            let (unknown, staleTrips) = try await Self.counted(store) {
                try await store.transition(
                    PaymentTransition(paymentId: "p1", orderId: "r1", move: PaymentLifecycle.move(.noAnswer), at: Shop.at(1), held: stale))
            }
            #expect(staleTrips == 3, "the write finds the payment otherwise, changes nothing, then it reads and writes")
            let stored = try await store.payment(id: "p1")
            #expect(unknown?.state == .unknown && unknown?.amount == claimed.amount && unknown == stored)

            let (resent, readFirst) = try await Self.counted(store) {
                try await store.transition(
                    PaymentTransition(
                        paymentId: "p1", orderId: "r1", move: PaymentLifecycle.move(.resend), at: Shop.at(2), countsReconcileAttempt: true,
                        expectedSends: 1))
            }
            #expect(resent?.state == .pending && resent?.sends == 2 && readFirst == 2, "no payment given: it reads, then writes")

            // The context kept for the order, made wrong: the compare-and-set finds it so.
            store.remember(MoveContext(merchant: "someone-else", request: nil), of: "r1")
            let (resolved, contextTrips) = try await Self.counted(store) {
                try await store.transition(
                    PaymentTransition(
                        paymentId: "p1", orderId: "r1", move: PaymentLifecycle.move(.authorized), at: Shop.at(3), held: resent))
            }
            #expect(resolved?.state == .authorized && contextTrips == 3)
            let event = try #require(try await Shop.events(store).last)
            #expect(event.merchantIdentifier == request.merchantIdentifier && event.type == .paymentAuthorized)
            let data = try #require(try Shop.json(event)["data"] as? [String: Any])
            #expect((data["paymentRequest"] as? [String: Any])?["reference"] as? String == "shop-r1", "the request as stored")
        }
    }
}
