import ApplePay
import Foundation
import OrchardCore
import Testing

/// Usage keys and usage announcements, on SQLite, in memory and on PostgreSQL alike: one current
/// key per merchant, replaced only over the one it names; announcements made for new mandates'
/// tokens, marked due, leased by due time, and written so that a mark made during an attempt keeps
/// them due while what was announced is kept.
@Suite("Merchant token usage contract: SQLite, in memory and PostgreSQL")
struct MerchantTokenUsageContractTests {
    typealias Kind = StoreContractTests.Kind
    typealias Shop = ShopStoreContractTests

    static func key(_ id: String, at seconds: Int) -> UsageKeyRecord {
        UsageKeyRecord(id: id, merchantIdentifier: Shop.merchant, sealed: Array(id.utf8), createdAt: Shop.at(seconds))
    }

    @Test("one current key per merchant: added over none, rotated over the current one only", arguments: Kind.enabled)
    func keys(kind: Kind) async throws {
        try await StoreContractTests.withStore(kind) { store in
            let check1 = try await store.currentUsageKey(merchantIdentifier: Shop.merchant) == nil
            #expect(check1)
            let check2 = try await store.addUsageKey(Self.key("uk_1", at: 1), replacing: nil)
            #expect(check2)
            let check3 = try await store.addUsageKey(Self.key("uk_2", at: 2), replacing: nil)
            #expect(!check3, "another instance made one first")
            let check4 = try await store.currentUsageKey(merchantIdentifier: Shop.merchant) == Self.key("uk_1", at: 1)
            #expect(check4)
            let check5 = try await store.addUsageKey(Self.key("uk_3", at: 3), replacing: "uk_9")
            #expect(!check5, "not over a key that is not current")
            let check6 = try await store.addUsageKey(Self.key("uk_4", at: 4), replacing: "uk_1")
            #expect(check6)
            let check7 = try await store.currentUsageKey(merchantIdentifier: Shop.merchant) == Self.key("uk_4", at: 4)
            #expect(check7)
            let check8 = try await store.currentUsageKey(merchantIdentifier: "merchant.other") == nil
            #expect(check8)
        }
    }

    @Test(
        "new mandates' tokens are scheduled once; due ones are leased soonest first and hidden until the lease ends",
        arguments: Kind.enabled)
    func scheduleAndLease(kind: Kind) async throws {
        try await StoreContractTests.withStore(kind) { store in
            let mandate = MandateStoreContractTests.mandate("mdt_1", payment: "p1", order: "o1", token: "tok-1")
            _ = try await MandateStoreContractTests.authorizeFirst(store, order: "o1", payment: "p1", mandate: mandate)
            let none = MandateStoreContractTests.mandate("mdt_2", payment: "p2", order: "o2", token: nil)
            _ = try await MandateStoreContractTests.authorizeFirst(store, order: "o2", payment: "p2", mandate: none)
            let check9 =
                try await store.scheduleUsageAnnouncements(merchantIdentifiers: ["merchant.other"], at: Shop.at(10), limit: 10) == 0
            #expect(check9)
            let check10 = try await store.scheduleUsageAnnouncements(merchantIdentifiers: [Shop.merchant], at: Shop.at(10), limit: 10) == 1
            #expect(check10)
            let check11 = try await store.scheduleUsageAnnouncements(merchantIdentifiers: [Shop.merchant], at: Shop.at(11), limit: 10) == 0
            #expect(check11)
            try await store.markUsageDue(merchantIdentifier: Shop.merchant, merchantTokenIdentifier: "tok-0", at: Shop.at(5))

            let check12 = try await store.leaseUsageAnnouncements(at: Shop.at(4), until: Shop.at(64), limit: 10).isEmpty
            #expect(check12)
            let leased = try await store.leaseUsageAnnouncements(at: Shop.at(20), until: Shop.at(80), limit: 10)
            #expect(leased.map(\.merchantTokenIdentifier) == ["tok-0", "tok-1"] && leased.allSatisfy { $0.dueAt == Shop.at(80) })
            let check13 = try await store.leaseUsageAnnouncements(at: Shop.at(79), until: Shop.at(139), limit: 10).isEmpty
            #expect(check13, "held")
            let check14 = try await store.leaseUsageAnnouncements(at: Shop.at(80), until: Shop.at(140), limit: 1).count == 1
            #expect(check14, "back")
            let payments = try await store.payments(mandateId: "mdt_1", limit: 10)
            #expect(payments.map(\.id) == ["p1"])
        }
    }

    @Test(
        "an attempt's outcome is written whole over its version; over a newer mark its key and hashes are kept, the mark's due time too",
        arguments: Kind.enabled)
    func recordOverVersion(kind: Kind) async throws {
        try await StoreContractTests.withStore(kind) { store in
            try await store.markUsageDue(merchantIdentifier: Shop.merchant, merchantTokenIdentifier: "tok-1", at: Shop.at(10))
            var leased = try #require(try await store.leaseUsageAnnouncements(at: Shop.at(10), until: Shop.at(70), limit: 1).first)
            var announced = leased
            announced.state = .announced
            announced.dueAt = Shop.at(1000)
            announced.tokenHash = Array(repeating: 1, count: 32)
            announced.tokenPublicKey = "BASE64"
            announced.keyId = "uk_1"
            announced.announcedAt = Shop.at(11)
            announced.expiresAt = Shop.at(2000)
            let check15 = try await store.recordUsageAnnouncement(announced, expectedVersion: leased.version)
            #expect(check15)
            var stored = try #require(try await store.usageAnnouncements(merchantTokenIdentifier: "tok-1").first)
            #expect(stored.state == .announced && stored.dueAt == Shop.at(1000) && stored.tokenHash == announced.tokenHash)
            #expect(stored.keyId == "uk_1" && stored.expiresAt == Shop.at(2000) && stored.version == leased.version + 1)

            // A charge marks it due while the next attempt is with Apple.
            try await store.markUsageDue(merchantIdentifier: Shop.merchant, merchantTokenIdentifier: "tok-1", at: Shop.at(20))
            leased = try #require(try await store.leaseUsageAnnouncements(at: Shop.at(20), until: Shop.at(80), limit: 1).first)
            try await store.markUsageDue(merchantIdentifier: Shop.merchant, merchantTokenIdentifier: "tok-1", at: Shop.at(21))
            announced = leased
            announced.state = .announced
            announced.dueAt = Shop.at(1000)
            announced.previousTokenHash = leased.tokenHash
            announced.tokenHash = Array(repeating: 2, count: 32)
            let check16 = try await store.recordUsageAnnouncement(announced, expectedVersion: leased.version)
            #expect(!check16)
            stored = try #require(try await store.usageAnnouncements(merchantTokenIdentifier: "tok-1").first)
            #expect(stored.state == .pending && stored.dueAt == Shop.at(21), "still due: the mark came after the attempt began")
            #expect(stored.tokenHash == announced.tokenHash && stored.previousTokenHash == Array(repeating: 1, count: 32))

            let check17 = try await store.markAllUsageDue(merchantIdentifier: Shop.merchant, at: Shop.at(15)) == 1
            #expect(check17)
            let check18 = try await store.usageAnnouncements(merchantTokenIdentifier: "tok-1").first?.dueAt == Shop.at(15)
            #expect(check18)
        }
    }
}
