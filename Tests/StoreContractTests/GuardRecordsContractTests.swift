import Foundation
import Logging
import OrchardCore
import OrchardPostgres
import OrchardTesting
import Testing

/// The guard records' contract, on SQLite, in memory and on PostgreSQL alike: a sync makes the
/// stored subjects exactly the watched ones, a lease hands out due records oldest first and
/// pushes them out of sight, a result is written only over the leased version and with its
/// events in the same transaction, and every field reads back as written.
@Suite("Guard records contract: SQLite, in memory and PostgreSQL")
struct GuardRecordsContractTests {
    typealias Kind = StoreContractTests.Kind
    static let merchant = "merchant.test"

    static func at(_ seconds: Int) -> Date { ShopStoreContractTests.at(seconds) }

    static func subject(_ target: String, _ kind: GuardCheckKind = .domainFile, merchant: String = merchant) -> GuardSubject {
        GuardSubject(merchantIdentifier: merchant, kind: kind, target: target)
    }

    /// The targets a lease hands out, in its order.
    static func lease(_ store: any OrchardStore, at seconds: Int, until end: Int? = nil, limit: Int = 10) async throws -> [String] {
        try await store.leaseGuardChecks(at: at(seconds), until: at(end ?? seconds + 60), limit: limit).map(\.subject.target)
    }

    static func stored(_ store: any OrchardStore, _ subject: GuardSubject) async throws -> GuardRecord? {
        try await store.guardRecords(merchantIdentifier: subject.merchantIdentifier).first { $0.subject == subject }
    }

    /// `record` as a failing check leaves it, and the event that reports it.
    static func failed(_ record: GuardRecord, at seconds: Int, recipient: String = merchant) throws -> (GuardRecord, WebhookEvent) {
        var result = record
        result.state = .failing
        result.detail = "https://\(record.subject.target)/.well-known/apple-developer-merchantid-domain-association answered 403"
        result.failures = 2
        result.checkedAt = at(seconds)
        result.firstFailureAt = at(seconds - 30)
        result.changedAt = at(seconds)
        result.nextCheckAt = at(seconds + 3600)
        return (result, try WebhookEvent.make(.domainVerificationFailed, guard: result, recipient: recipient, at: at(seconds)))
    }

    static func events(_ store: any OrchardStore) async throws -> [WebhookEvent] {
        try await ShopStoreContractTests.events(store)
    }

    @Test(
        "a sync inserts the new subjects pending and due, deletes the unwatched and leaves the others as they are",
        arguments: Kind.enabled)
    func sync(kind: Kind) async throws {
        try await StoreContractTests.withStore(kind) { store in
            let (a, b, c, d) = (Self.subject("a.example"), Self.subject("b.example"), Self.subject("c.example"), Self.subject("d.example"))
            try await store.syncGuardSubjects([a, b, c], at: Self.at(0))
            let fresh = try await store.guardRecords(merchantIdentifier: nil)
            #expect(fresh.map(\.subject) == [a, b, c])
            #expect(fresh.allSatisfy { $0 == GuardRecord(subject: $0.subject, nextCheckAt: Self.at(0)) }, "pending, due now, version 0")
            #expect(fresh.first?.state == .pending && fresh.first?.detail == "not checked yet" && fresh.first?.checkedAt == nil)

            let leased = try #require(try await store.leaseGuardChecks(at: Self.at(0), until: Self.at(60), limit: 1).first)
            #expect(leased.subject == a)
            let (checked, event) = try Self.failed(leased, at: 10)
            #expect(try await store.recordGuardCheck(checked, events: [event]))

            try await store.syncGuardSubjects([a, c, d], at: Self.at(100))
            let after = try await store.guardRecords(merchantIdentifier: nil)
            #expect(after.map(\.subject) == [a, c, d], "b is no longer watched: deleted")
            var written = checked
            written.version += 1
            #expect(after.first == written, "a kept its state, its history and its version")
            #expect(after.dropFirst().first == GuardRecord(subject: c, nextCheckAt: Self.at(0)), "c untouched, still due since 0")
            #expect(after.last == GuardRecord(subject: d, nextCheckAt: Self.at(100)), "d new: pending, due at the sync")
            try await store.syncGuardSubjects([a, c, d], at: Self.at(200))
            #expect(try await store.guardRecords(merchantIdentifier: nil) == after, "the same subjects again change nothing")

            try await store.syncGuardSubjects([b], at: Self.at(300))
            #expect(try await store.guardRecords(merchantIdentifier: nil) == [GuardRecord(subject: b, nextCheckAt: Self.at(300))])
            try await store.syncGuardSubjects([], at: Self.at(400))
            #expect(try await store.guardRecords(merchantIdentifier: nil).isEmpty)
            #expect(try await Self.events(store).map(\.id) == [event.id], "a sync sends nothing, and deletes no event")
        }
    }

    @Test("records are listed by merchant, check and target in byte order, and by merchant when asked", arguments: Kind.enabled)
    func listing(kind: Kind) async throws {
        try await StoreContractTests.withStore(kind) { store in try await Self.expectByteOrder(store) }
    }

    @Test(
        "PostgreSQL lists and leases in byte order in a database whose own collation is a language's (ICU en-US)",
        .enabled(if: PostgresServer.enabled))
    func languageCollation() async throws {
        let server = try await PostgresServer.shared()
        try await server.withDatabase(poolSize: 2) { settings in
            var icu = settings
            icu.database = settings.database + "_icu"
            try await server.query("postgres", "CREATE DATABASE \(icu.database) TEMPLATE template0 LOCALE_PROVIDER icu ICU_LOCALE 'en-US'")
            #expect(try await server.query(icu.database, "SELECT 'Merchant.Z' < 'merchant.a', 'B.example' < 'b.example'") == "f|f")
            do {
                let opened = try await PostgresStore.open(icu, logger: Logger(label: "orchard.test"), eventLoops: PostgresServer.storeLoops)
                try await opened.withRunning { store in try await Self.expectByteOrder(store) }
            } catch {
                await server.dropDatabase(icu.database)
                throw error
            }
            await server.dropDatabase(icu.database)
        }
    }

    /// Lists and leases records whose byte order is not a language's.
    static func expectByteOrder(_ store: any OrchardStore) async throws {
        // Byte order, not a language's: upper case before lower, '-' before '.'.
        let subjects = [
            Self.subject("a.example", merchant: "merchant.b"), Self.subject("a-z.example", merchant: "merchant.b"),
            Self.subject("a.example", .domainCertificate, merchant: "merchant.b"),
            Self.subject("merchant.b", .registration, merchant: "merchant.b"),
            Self.subject("ab12", .processingCertificate, merchant: "merchant.b"), Self.subject("z.example", merchant: "Merchant.Z"),
            Self.subject("ff00", .identityCertificate, merchant: "merchant.a"), Self.subject("B.example", merchant: "merchant.a"),
            Self.subject("b.example", merchant: "merchant.a"),
        ]
        try await store.syncGuardSubjects(Set(subjects), at: Self.at(0))
        let expected = [
            ("Merchant.Z", GuardCheckKind.domainFile, "z.example"), ("merchant.a", .domainFile, "B.example"),
            ("merchant.a", .domainFile, "b.example"), ("merchant.a", .identityCertificate, "ff00"),
            ("merchant.b", .domainCertificate, "a.example"), ("merchant.b", .domainFile, "a-z.example"),
            ("merchant.b", .domainFile, "a.example"), ("merchant.b", .processingCertificate, "ab12"),
            ("merchant.b", .registration, "merchant.b"),
        ].map { GuardSubject(merchantIdentifier: $0.0, kind: $0.1, target: $0.2) }
        #expect(try await store.guardRecords(merchantIdentifier: nil).map(\.subject) == expected)
        #expect(try await store.guardRecords(merchantIdentifier: "merchant.a").map(\.subject) == Array(expected[1...3]))
        #expect(try await store.guardRecords(merchantIdentifier: "merchant.none").isEmpty)
        #expect(try await Self.lease(store, at: 0, limit: 3) == expected.prefix(3).map(\.target), "due together: the first by key")
        #expect(try await Self.lease(store, at: 0, limit: 100) == expected.dropFirst(3).map(\.target))
    }

    @Test(
        "a lease takes only due records, the longest due first, at most its limit; it moves them to the lease's end and bumps their version",
        arguments: Kind.enabled)
    func lease(kind: Kind) async throws {
        try await StoreContractTests.withStore(kind) { store in
            let (a, b, c, d) = (Self.subject("a.example"), Self.subject("b.example"), Self.subject("c.example"), Self.subject("d.example"))
            try await store.syncGuardSubjects([c], at: Self.at(0))
            try await store.syncGuardSubjects([c, b, a], at: Self.at(5))
            try await store.syncGuardSubjects([c, b, a, d], at: Self.at(30))
            #expect(try await Self.lease(store, at: 10, until: 70, limit: 0).isEmpty)
            #expect(try await Self.lease(store, at: 10, until: 70, limit: -1).isEmpty, "a negative limit takes nothing")

            let first = try await store.leaseGuardChecks(at: Self.at(10), until: Self.at(70), limit: 2)
            #expect(first.map(\.subject) == [c, a], "c due since 0, then a and b due since 5, by key")
            #expect(first.allSatisfy { $0.nextCheckAt == Self.at(70) && $0.version == 1 && $0.state == .pending })
            #expect(try await Self.stored(store, c) == first.first, "returned as stored")
            #expect(try await Self.lease(store, at: 10, until: 70) == ["b.example"], "the leased ones are passed by")
            #expect(try await Self.lease(store, at: 10, until: 70).isEmpty)
            #expect(try await Self.lease(store, at: 29).isEmpty, "d is due at 30")
            #expect(try await Self.lease(store, at: 30, until: 100) == ["d.example"])
            #expect(try await Self.lease(store, at: 69).isEmpty)
            let again = try await store.leaseGuardChecks(at: Self.at(70), until: Self.at(130), limit: 10)
            #expect(again.map(\.subject) == [a, b, c], "expired leases come back, due together at 70: by key")
            #expect(again.allSatisfy { $0.version == 2 && $0.nextCheckAt == Self.at(130) })
            #expect(try await Self.stored(store, d)?.version == 1)
            #expect(try await Self.events(store).isEmpty, "a lease sends nothing")
        }
    }

    @Test(
        "a result is written over the leased version only: a stale one changes nothing and inserts no event",
        arguments: Kind.enabled)
    func compareAndSet(kind: Kind) async throws {
        try await StoreContractTests.withStore(kind) { store in
            let a = Self.subject("a.example")
            try await store.syncGuardSubjects([a], at: Self.at(0))
            let pending = try #require(try await Self.stored(store, a))
            let (unleased, unleasedEvent) = try Self.failed(pending, at: 5)
            let leased = try #require(try await store.leaseGuardChecks(at: Self.at(0), until: Self.at(60), limit: 1).first)
            #expect(leased.version == pending.version + 1)
            #expect(try await store.recordGuardCheck(unleased, events: [unleasedEvent]) == false, "leased meanwhile: stale")
            #expect(try await Self.stored(store, a) == leased, "nothing changed")
            #expect(try await Self.events(store).isEmpty)

            // The lease ran out and another instance took the record: the first holder's result is stale.
            let (late, lateEvent) = try Self.failed(leased, at: 61)
            let retaken = try #require(try await store.leaseGuardChecks(at: Self.at(60), until: Self.at(120), limit: 1).first)
            #expect(retaken.version == leased.version + 1)
            #expect(try await store.recordGuardCheck(late, events: [lateEvent]) == false)
            #expect(try await Self.stored(store, a) == retaken)
            #expect(try await Self.events(store).isEmpty)

            let (result, event) = try Self.failed(retaken, at: 62)
            let platform = try WebhookEvent.make(.domainVerificationFailed, guard: result, recipient: "platform.test", at: Self.at(62))
            #expect(try await store.recordGuardCheck(result, events: [event, platform]))
            var written = result
            written.version = retaken.version + 1
            #expect(try await Self.stored(store, a) == written)
            let byId: (WebhookEvent, WebhookEvent) -> Bool = { $0.id < $1.id }
            #expect(try await Self.events(store).sorted(by: byId) == [event, platform].sorted(by: byId), "both, as made, in the outbox")
            #expect(try await store.webhookEvents(merchantIdentifier: "platform.test", state: .pending, limit: 10) == [platform])
            #expect(try await store.leaseWebhookEvents(at: Self.at(62), until: Self.at(92), limit: 10).count == 2, "due for delivery")

            #expect(try await store.recordGuardCheck(result, events: [event]) == false, "the same result twice: recorded once")
            #expect(try await store.recordGuardCheck(written, events: []), "an unleased write over the current version is taken")
            written.version += 1
            #expect(try await Self.stored(store, a) == written)
            try await store.syncGuardSubjects([], at: Self.at(70))
            #expect(try await store.recordGuardCheck(written, events: [event]) == false, "deleted meanwhile")
            #expect(try await Self.events(store).count == 2)
        }
    }

    @Test("every field of a record reads back as written, none and far-future dates included", arguments: Kind.enabled)
    func roundTrip(kind: Kind) async throws {
        try await StoreContractTests.withStore(kind) { store in
            let subject = Self.subject("0123abcd", .processingCertificate, merchant: "merchant.round-trip")
            try await store.syncGuardSubjects([subject], at: Self.at(0))
            let leased = try #require(try await store.leaseGuardChecks(at: Self.at(0), until: Self.at(60), limit: 5).first)
            var record = leased
            record.state = .expiring
            record.stage = 15
            record.detail = "expires in 14 days — renew it: orchard certs rotate --type processing « é »"
            record.expiresAt = Self.at(14 * 86_400 + 1)
            record.checkedAt = Self.at(1)
            record.firstFailureAt = Self.at(-86_400)
            record.changedAt = Self.at(2)
            record.failures = 7
            record.repairs = 3
            record.nextCheckAt = Self.at(3600)
            #expect(try await store.recordGuardCheck(record, events: []))
            record.version += 1
            #expect(try await store.guardRecords(merchantIdentifier: nil) == [record])
            #expect(
                try await store.leaseGuardChecks(at: Self.at(3600), until: Self.at(3660), limit: 5).first?.expiresAt == record.expiresAt)
            record.version += 1
            record.nextCheckAt = Self.at(3660)

            // 9999-12-31T23:59:59Z: a certificate may say so; the nil dates stay nil.
            record.expiresAt = Date(timeIntervalSince1970: 253_402_300_799)
            (record.checkedAt, record.firstFailureAt, record.changedAt) = (nil, nil, nil)
            (record.state, record.stage, record.failures, record.repairs) = (.ok, 0, 0, 0)
            #expect(try await store.recordGuardCheck(record, events: []))
            record.version += 1
            #expect(try await store.guardRecords(merchantIdentifier: "merchant.round-trip") == [record])
        }
    }

    @Test("an event the outbox refuses rolls the record's write back with it", arguments: Kind.enabled.filter { $0 != .memory })
    func atomicWithEvents(kind: Kind) async throws {
        try await StoreContractTests.withStore(kind) { store in
            let a = Self.subject("a.example")
            try await store.syncGuardSubjects([a], at: Self.at(0))
            let leased = try #require(try await store.leaseGuardChecks(at: Self.at(0), until: Self.at(60), limit: 1).first)
            let (result, event) = try Self.failed(leased, at: 5)
            // The second event reuses the first's ID: the outbox's key refuses it, after the record's update ran.
            var clash = try WebhookEvent.make(.domainVerificationFailed, guard: result, recipient: "platform.test", at: Self.at(5))
            clash.id = event.id
            await #expect(throws: (any Error).self) { try await store.recordGuardCheck(result, events: [event, clash]) }
            #expect(try await Self.stored(store, a) == leased, "the record is as leased")
            #expect(try await Self.events(store).isEmpty, "and the first event is gone with it")
            #expect(try await store.recordGuardCheck(result, events: [event]), "the leased version still holds")
            #expect(try await Self.events(store) == [event])
        }
    }
}
