import ApplePay
import Foundation
import OrchardCore
import OrchardPostgres
import OrchardTesting
import PostgresNIO
import Testing

/// A mandate belongs to its order's owner as the move that creates it finds the order, not as
/// the engine read it when it claimed the payment: a tenant retired while its first payment was
/// at the processor leaves no mandate under the identifier a later tenant may take.
extension MandateStoreContractTests {
    /// `count` first payments of agreements claimed for `merchant.test`, with merchant tokens.
    static func claimFirsts(_ store: any OrchardStore, count: Int) async throws -> [PaymentRecord] {
        var claimed: [PaymentRecord] = []
        for n in 1...count {
            try await store.insert(try StoreContractTests.order("o\(n)"))
            var claim = Shop.claim("o\(n)", payment: "p\(n)")
            claim.draft.merchantTokenIdentifier = "mtid-p\(n)"
            claimed.append(try await store.claimPayment(claim))
        }
        return claimed
    }

    /// The authorizing move of `payment` with the mandate the engine builds from the order it
    /// read at the claim (owned by `merchant.test`); `held`: written from the engine's copy.
    static func authorizing(_ payment: PaymentRecord, mandate id: String, held: Bool) -> PaymentTransition {
        PaymentTransition(
            paymentId: payment.id, orderId: payment.orderId, move: PaymentLifecycle.move(.authorized), at: Shop.at(5),
            outcome: AuthorizationOutcome(status: .authorized, processorReference: "psp-\(payment.id)"),
            mandate: mandate(id, payment: payment.id, order: payment.orderId, token: payment.merchantTokenIdentifier),
            held: held ? payment : nil)
    }

    @Test(
        "a first payment answered after its tenant was retired creates its mandate under the retirement's key, never the partner ID",
        arguments: Kind.enabled)
    func ownedByTheOrderAsTheMoveFindsIt(kind: Kind) async throws {
        try await StoreContractTests.withStore(kind) { store in
            let claimed = try await Self.claimFirsts(store, count: 2)
            // The retirement commits while both payments are at the processor.
            let retired = try await store.deleteRegistration(partnerIdentifier: Shop.merchant, at: Shop.at(3))
            #expect(RetiredTenant.isRecordKey(retired))
            // One move is written from the payment as the engine holds it (PostgreSQL's path
            // without a read, from the order's context its claim read), one from the store's read.
            for (n, payment) in zip(1..., claimed) {
                let moved = try await store.transition(Self.authorizing(payment, mandate: "mdt_\(n)", held: n == 1))
                #expect(moved?.mandateId == "mdt_\(n)", "the payment moves, and names its mandate")
                #expect(try await store.mandate(id: "mdt_\(n)")?.merchantIdentifier == retired, "mdt_\(n)")
            }
            #expect(try await store.mandates(merchantIdentifier: Shop.merchant, state: nil, limit: 10).isEmpty)
            #expect(try await store.webhookEvents(merchantIdentifier: Shop.merchant, state: nil, limit: 10).isEmpty)
            let events = try await store.webhookEvents(merchantIdentifier: retired, state: nil, limit: 10)
            #expect(events.filter { $0.type == .mandateCreated }.count == 2, "reported to the retired owner, whose webhook is gone")

            // An order its tenant still owns gives the mandate to that tenant, whatever the engine built.
            var other = try StoreContractTests.order("o9")
            other.merchantIdentifier = Shop.otherMerchant
            try await store.insert(other)
            let payment = try await store.claimPayment(Shop.claim("o9", payment: "p9"))
            _ = try await store.transition(Self.authorizing(payment, mandate: "mdt_9", held: true))
            #expect(try await store.mandate(id: "mdt_9")?.merchantIdentifier == Shop.otherMerchant)
        }
    }

    @Test(
        "PostgreSQL: a retirement committed while the move waits for the order's row gives the mandate to the retirement's key",
        .enabled(if: PostgresServer.enabled))
    func retiredWhileTheMoveWaits() async throws {
        let server = try await PostgresServer.shared()
        try await server.withDatabase { settings in
            let opened = try await PostgresStore.open(
                settings, logger: PostgresClaimRaceTests.logger, eventLoops: PostgresServer.storeLoops)
            try await opened.withRunning { store in
                let claimed = try await Self.claimFirsts(store, count: 1)
                let other = try await PostgresClaimRaceTests.connect(settings, server, id: 1)
                let watcher = try await PostgresClaimRaceTests.connect(settings, server, id: 2)
                // Another instance's retirement holds the order's row; the move starts after it
                // moved the order, before it commits, so the move's snapshot still sees the partner.
                let key = RetiredTenant.recordKey(for: Shop.merchant)
                _ = try await other.query("BEGIN", logger: PostgresClaimRaceTests.logger).collect()
                _ = try await other.query(
                    "UPDATE orders SET merchant = \(key) WHERE merchant = \(Shop.merchant)", logger: PostgresClaimRaceTests.logger
                ).collect()
                let move = Task { try await store.transition(Self.authorizing(claimed[0], mandate: "mdt_1", held: true)) }
                try await PostgresClaimRaceTests.untilSomeoneWaits(on: watcher)
                _ = try await other.query("COMMIT", logger: PostgresClaimRaceTests.logger).collect()
                #expect(try await move.value?.mandateId == "mdt_1")
                #expect(try await store.mandate(id: "mdt_1")?.merchantIdentifier == key)
                #expect(try await store.mandates(merchantIdentifier: Shop.merchant, state: nil, limit: 10).isEmpty)
                #expect(try await store.webhookEvents(merchantIdentifier: Shop.merchant, state: nil, limit: 10).isEmpty)
                try await other.close()
                try await watcher.close()
            }
        }
    }
}
