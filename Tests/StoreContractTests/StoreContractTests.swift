import ApplePay
import Foundation
import Logging
import OrchardCore
import OrchardInMemory
import OrchardPostgres
import OrchardSQLite
import OrchardTesting
import Testing

/// The store contract, run against SQLite, the in-memory store and PostgreSQL alike.
@Suite("Store contract: SQLite, in memory and PostgreSQL")
struct StoreContractTests {
    enum Kind: String, CaseIterable, Sendable {
        case sqlite, memory, postgres

        /// Every store, less PostgreSQL when ORCHARD_SKIP_POSTGRES=1 (a machine without it).
        static let enabled = allCases.filter { $0 != .postgres || PostgresServer.enabled }
    }

    static func withStore(_ kind: Kind, _ body: (any OrchardStore) async throws -> Void) async throws {
        switch kind {
        case .memory:
            try await body(InMemoryStore())
        case .sqlite:
            let directory = try TemporaryDirectory()
            defer { directory.remove() }
            try await body(try SQLiteStore(path: directory.path("orchard.sqlite")))
        case .postgres:
            // A fresh database of the process's private cluster, dropped afterwards.
            try await PostgresServer.shared().withDatabase { settings in
                let store = try await PostgresStore.open(
                    settings, logger: Logger(label: "orchard.test"), eventLoops: PostgresServer.storeLoops)
                try await store.withRunning { try await body($0) }
            }
        }
    }

    static let now = TestRecords.now

    static func order(_ id: String) throws -> OrderRecord { try TestRecords.order(id) }

    static func claim(_ orderId: String, transaction: String, payment: String) -> PaymentClaim {
        TestRecords.claim(orderId, transaction: transaction, payment: payment)
    }

    /// The code of the business refusal `body` throws; nil when it throws nothing (or something else).
    static func storeError(_ body: () async throws -> Void) async -> CoreError.Code? { await TestRecords.refusal(body) }

    @Test("claims, re-sends and moves keep the lifecycle's compare-and-sets", arguments: Kind.enabled)
    func lifecycle(kind: Kind) async throws {
        try await Self.withStore(kind) { store in
            try await store.insert(try Self.order("o1"))
            let first = try await store.claimPayment(Self.claim("o1", transaction: "t1", payment: "p1"))
            #expect(first.reference == "o1-1" && first.state == .pending && first.sends == 1)
            #expect(try await store.order(id: "o1")?.state == .pending)
            #expect(
                await Self.storeError { _ = try await store.claimPayment(Self.claim("o1", transaction: "t1", payment: "p2")) }
                    == .replayedPayment)
            #expect(
                await Self.storeError { _ = try await store.claimPayment(Self.claim("o1", transaction: "t2", payment: "p2")) }
                    == .paymentInProgress)

            let later = Self.now.addingTimeInterval(60)
            let noAnswer = PaymentTransition(
                paymentId: "p1", orderId: "o1", move: PaymentLifecycle.move(.noAnswer), at: Self.now, nextReconcileAt: later)
            #expect(try await store.transition(noAnswer)?.state == .unknown)
            #expect(try await store.transition(noAnswer) == nil, "a second identical move finds another state")
            let leaseEnd = later.addingTimeInterval(60)
            #expect(try await store.leasePaymentsForReconciliation(at: Self.now, until: leaseEnd, limit: 10).isEmpty)
            let leased = try await store.leasePaymentsForReconciliation(at: later, until: leaseEnd, limit: 10)
            #expect(leased.map(\.id) == ["p1"] && leased.first?.nextReconcileAt == leaseEnd)
            #expect(try await store.leasePaymentsForReconciliation(at: later, until: leaseEnd, limit: 10).isEmpty, "held by the lease")
            #expect(try await store.deferReconciliation(paymentId: "p1", until: nil))
            #expect(try await store.leasePaymentsForReconciliation(at: leaseEnd, until: leaseEnd, limit: 10).isEmpty)

            // A re-send names the unknown attempt it sends again; a new attempt cannot take its place.
            #expect(
                await Self.storeError { _ = try await store.claimPayment(Self.claim("o1", transaction: "t3", payment: "p3")) }
                    == .paymentInProgress)
            var again = Self.claim("o1", transaction: "t3", payment: "p3")
            again.resending = "p1"
            let resent = try await store.claimPayment(again)
            #expect(resent.id == "p1" && resent.reference == "o1-1" && resent.sends == 2, "the unknown attempt is re-sent")
            #expect(try await store.stalePendingPayments(before: later).map(\.id) == ["p1"])
            let authorized = PaymentTransition(
                paymentId: "p1", orderId: "o1", move: PaymentLifecycle.move(.authorized), at: later,
                outcome: AuthorizationOutcome(status: .authorized, processorReference: "psp-1", links: ["settle": "https://psp/s"]))
            let paid = try #require(try await store.transition(authorized))
            #expect(paid.state == .authorized && paid.processorReference == "psp-1" && paid.links["settle"] == "https://psp/s")
            #expect(try await store.order(id: "o1")?.state == .paid)
            #expect(try await store.retryPayload(paymentId: "p1") == nil, "the sealed request is gone once resolved")
            #expect(
                await Self.storeError { _ = try await store.claimPayment(Self.claim("o1", transaction: "t4", payment: "p4")) }
                    == .orderNotOpen)
            #expect(try await store.payments(orderId: "o1").count == 1)
            #expect(try await store.payments(state: .authorized, limit: 5).map(\.id) == ["p1"])

            let refundLinks = ["settle": "https://psp/s", "refund": "https://psp/r"]
            let settle = PaymentTransition(
                paymentId: "p1", orderId: "o1", move: PaymentLifecycle.move(.settle), at: later, links: refundLinks)
            let settled = try #require(try await store.transition(settle))
            #expect(settled.state == .settled && settled.links == refundLinks)
            #expect(settled.processorReference == "psp-1", "links alone leave the processor's reference as it was")
            #expect(try await store.payment(id: "p1")?.links == refundLinks)
        }
    }

    @Test(
        "a move rolls back when the order or the payment is elsewhere; a refusal reopens the order for a new reference",
        arguments: Kind.enabled)
    func orderCompareAndSet(kind: Kind) async throws {
        try await Self.withStore(kind) { store in
            try await store.insert(try Self.order("o2"))
            _ = try await store.claimPayment(Self.claim("o2", transaction: "t1", payment: "p1"))
            var move = PaymentLifecycle.move(.declined)
            move.order = (.open, .open)
            #expect(try await store.transition(PaymentTransition(paymentId: "p1", orderId: "o2", move: move, at: Self.now)) == nil)
            #expect(try await store.payment(id: "p1")?.state == .pending)
            var elsewhere = PaymentLifecycle.move(.declined)
            elsewhere.from = .unknown
            #expect(try await store.transition(PaymentTransition(paymentId: "p1", orderId: "o2", move: elsewhere, at: Self.now)) == nil)
            #expect(try await store.order(id: "o2")?.state == .pending, "the order's move is undone when the payment's fails")
            let declined = PaymentTransition(paymentId: "p1", orderId: "o2", move: PaymentLifecycle.move(.declined), at: Self.now)
            #expect(try await store.transition(declined)?.state == .refused)
            #expect(try await store.order(id: "o2")?.state == .open)
            let second = try await store.claimPayment(Self.claim("o2", transaction: "t2", payment: "p2"))
            #expect(second.reference == "o2-2")
            var repriced = try Self.order("o2")
            repriced.priced.total = 1
            #expect(await Self.storeError { try await store.updateOpen(repriced) } == .orderNotOpen, "a pending order cannot be repriced")
        }
    }

    @Test("counts for the metrics: payments by state and the webhook backlog (nil only in memory)", arguments: Kind.enabled)
    func operationalCounts(kind: Kind) async throws {
        try await Self.withStore(kind) { store in
            try await store.insert(try Self.order("o3"))
            _ = try await store.claimPayment(Self.claim("o3", transaction: "t9", payment: "p9"))
            let noAnswer = PaymentTransition(
                paymentId: "p9", orderId: "o3", move: PaymentLifecycle.move(.noAnswer), at: Self.now,
                nextReconcileAt: Self.now.addingTimeInterval(60))
            _ = try await store.transition(noAnswer)
            guard let counts = try await store.operationalCounts() else {
                #expect(kind == .memory, "only the in-memory double may leave the gauges out")
                return
            }
            #expect(counts.payments[.unknown] == 1 && counts.payments[.pending] == nil)
            let pending = try await store.webhookEvents(merchantIdentifier: nil, state: .pending, limit: 100)
            #expect(counts.pendingWebhooks == pending.count)
            #expect(counts.oldestPendingWebhook == pending.map(\.createdAt).min())
            let unknown = try #require(try await store.payment(id: "p9"))
            #expect(counts.oldestUnknownPayment == unknown.createdAt)
            // Settled from unknown: none is left, and the age is gone with it.
            let found = PaymentTransition(
                paymentId: "p9", orderId: "o3", move: PaymentLifecycle.move(.queriedAuthorized), at: Self.now.addingTimeInterval(120))
            _ = try await store.transition(found)
            #expect(try await store.operationalCounts()?.oldestUnknownPayment == nil)
        }
    }

    @Test("a settle or cancel holds its payment: one holder until the lease ends, a release or a move", arguments: Kind.enabled)
    func operationClaims(kind: Kind) async throws {
        try await Self.withStore(kind) { store in
            try await store.insert(try Self.order("o1"))
            _ = try await store.claimPayment(Self.claim("o1", transaction: "t1", payment: "p1"))
            let later = Self.now.addingTimeInterval(60)
            func claim(at date: Date, in state: PaymentState = .authorized) async throws -> Bool {
                try await store.claimOperation(paymentId: "p1", in: state, at: date, until: date.addingTimeInterval(60))
            }
            #expect(try await claim(at: Self.now) == false, "a pending payment is no one's to settle")
            _ = try await store.transition(
                PaymentTransition(paymentId: "p1", orderId: "o1", move: PaymentLifecycle.move(.authorized), at: Self.now))
            #expect(try await claim(at: Self.now))
            #expect(try await claim(at: Self.now.addingTimeInterval(30)) == false, "held")
            #expect(try await claim(at: later), "the lease ran out")
            try await store.releaseOperation(paymentId: "p1")
            #expect(try await claim(at: later), "given back")
            #expect(try await claim(at: later, in: .settled) == false, "another state")
            let settled = PaymentTransition(paymentId: "p1", orderId: "o1", move: PaymentLifecycle.move(.settle), at: later)
            #expect(try await store.transition(settled)?.state == .settled, "the holder's move goes through")
            #expect(try await claim(at: later, in: .settled), "a move gives the hold back")
        }
    }

    @Test("registrations: one owner per domain", arguments: Kind.enabled)
    func registrations(kind: Kind) async throws {
        try await Self.withStore(kind) { store in
            let a = RegisteredMerchant(
                partnerIdentifier: "a", name: "A", encryptTo: "platform", merchantUrl: nil, domains: ["a.example"], createdAt: Self.now,
                updatedAt: Self.now)
            try await store.saveRegistration(a)
            var b = a
            b.partnerIdentifier = "b"
            #expect(await Self.storeError { try await store.saveRegistration(b) } == .domainTaken)
            b.domains = ["b.example"]
            try await store.saveRegistration(b)
            #expect(try await store.registeredMerchants().map(\.partnerIdentifier) == ["a", "b"])
            try await store.deleteRegistration(partnerIdentifier: "a", at: Self.now)
            #expect(try await store.registeredMerchants().map(\.domains) == [["b.example"]])
        }
    }

    @Test(
        "retiring a registered merchant revokes its keys, drops its settings, skips its undelivered events and moves what it owned out of a new tenant's reach",
        arguments: Kind.enabled)
    func retirement(kind: Kind) async throws {
        try await Self.withStore(kind) { store in
            // "merchant.test" (the contract's orders' merchant) as a registered tenant, beside another.
            for partner in ["merchant.test", "merchant.other"] {
                try await store.saveRegistration(
                    RegisteredMerchant(
                        partnerIdentifier: partner, name: partner, encryptTo: "platform", merchantUrl: nil, domains: ["\(partner).example"],
                        createdAt: Self.now, updatedAt: Self.now))
                try await store.saveSealedMerchantSettings(partnerIdentifier: partner, sealed: [1, 2, 3], at: Self.now)
                try await store.insertAPIKey(APIKeyRecord.generate(merchantIdentifier: partner, at: Self.now).record)
            }
            try await store.insert(try Self.order("o1"))
            _ = try await store.claimPayment(Self.claim("o1", transaction: "t1", payment: "p1"))
            let authorized = PaymentTransition(paymentId: "p1", orderId: "o1", move: PaymentLifecycle.move(.authorized), at: Self.now)
            _ = try await store.transition(authorized)
            #expect(try await store.webhookEvents(merchantIdentifier: "merchant.test", state: .pending, limit: 10).count == 1)

            let later = Self.now.addingTimeInterval(60)
            try await store.deleteRegistration(partnerIdentifier: "merchant.test", at: later)
            #expect(try await store.registeredMerchants().map(\.partnerIdentifier) == ["merchant.other"])
            #expect(try await store.sealedMerchantSettings().keys.sorted() == ["merchant.other"])

            // What it owned moved, in the same transaction, to one owner no identifier can be.
            let retired = try #require(try await store.order(id: "o1")?.merchantIdentifier)
            #expect(retired.hasPrefix("retired/merchant.test/") && retired != "merchant.test")
            let keys = try await store.apiKeys(merchantIdentifier: nil)
            #expect(!keys.contains { $0.merchantIdentifier == "merchant.test" })
            #expect(keys.filter { $0.merchantIdentifier == retired }.map(\.revokedAt) == [later])
            #expect(keys.filter { $0.merchantIdentifier == "merchant.other" }.allSatisfy { $0.revokedAt == nil })
            #expect(try await store.webhookEvents(merchantIdentifier: "merchant.test", state: nil, limit: 10).isEmpty)
            let events = try await store.webhookEvents(merchantIdentifier: retired, state: nil, limit: 10)
            #expect(events.map(\.state) == [.skipped])
            #expect(events.first?.lastError == RetiredTenant.skippedEventError)
            #expect(try await store.leaseWebhookEvents(at: later, until: later.addingTimeInterval(60), limit: 10).isEmpty)

            // A new tenant under the same identifier starts with nothing of the old one's.
            try await store.saveRegistration(
                RegisteredMerchant(
                    partnerIdentifier: "merchant.test", name: "someone else", encryptTo: "platform", merchantUrl: nil,
                    domains: ["new.example"], createdAt: later, updatedAt: later))
            #expect(try await store.order(id: "o1")?.merchantIdentifier == retired)
            #expect(try await store.apiKeys(merchantIdentifier: "merchant.test").isEmpty)
            #expect(try await store.mandates(merchantIdentifier: "merchant.test", state: nil, limit: 10).isEmpty)

            // Each retirement has its own owner.
            try await store.insert(try Self.order("o2"))
            try await store.deleteRegistration(partnerIdentifier: "merchant.test", at: later)
            let second = try #require(try await store.order(id: "o2")?.merchantIdentifier)
            #expect(second.hasPrefix("retired/merchant.test/") && second != retired)
        }
    }
}
