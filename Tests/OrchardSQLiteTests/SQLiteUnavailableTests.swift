import ApplePay
import Foundation
import OrchardCore
import OrchardTesting
import Testing

@testable import OrchardSQLite

/// A SQLite file that cannot be written (here a full one: `PRAGMA max_page_count` makes SQLite
/// answer SQLITE_FULL exactly as a full disk does): writes fail as
/// ``StoreError/Code/unavailable`` and change nothing, the readiness check fails while they do,
/// and both recover by themselves once there is room again.
@Suite("SQLite store: a full database")
struct SQLiteUnavailableTests {
    static func order(_ id: String) -> OrderRecord {
        let priced = PricedOrder(
            currency: "EUR", lines: [], items: [], subtotal: 100, shippingMethod: nil, couponCode: nil, discount: 0,
            shippingCountry: nil, total: 100)
        return OrderRecord(
            id: id, merchantIdentifier: "merchant.test", state: .open, priced: priced,
            applicationData: Array(repeating: 7, count: 3000), createdAt: Date())
    }

    @Test("full: writes are StoreError.unavailable and checkAvailable fails; with room again both succeed, untouched otherwise")
    func full() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let store = try SQLiteStore(path: directory.path("orchard.sqlite"))
        try await store.insert(Self.order("before"))
        try await store.checkAvailable()
        let pages = try await store.database.run { db in try db.query("PRAGMA page_count").first?.int("page_count") ?? 0 }
        try await store.database.run { db in try db.execute("PRAGMA max_page_count = \(unescaped: String(pages))") }

        // Orders fill the free pages left, then one is refused: a bounded loop, not a wait.
        var refused: (any Error)?
        var written = 0
        for index in 0..<500 {
            do {
                try await store.insert(Self.order("fill-\(index)"))
                written += 1
            } catch {
                refused = error
                break
            }
        }
        #expect((refused as? StoreError)?.code == .unavailable, "\(String(describing: refused))")
        await #expect { try await store.checkAvailable() } throws: { ($0 as? StoreError)?.code == .unavailable }
        #expect(try await store.order(id: "fill-\(written)") == nil, "the refused write changed nothing")
        #expect(try await store.order(id: "before") != nil, "reads still work")

        try await store.database.run { db in try db.execute("PRAGMA max_page_count = 1073741823") }

        try await store.checkAvailable()
        try await store.insert(Self.order("after"))
        #expect(try await store.order(id: "after") != nil)
    }
}
