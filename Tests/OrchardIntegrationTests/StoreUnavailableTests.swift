import CurlClient
import Foundation
import OrchardConfiguration
import OrchardCore
import OrchardIntegrationTesting
import OrchardServer
import OrchardServerTesting
import OrchardServices
import OrchardTesting
import Synchronization
import Testing

@testable import OrchardSQLite

/// The server over a store that cannot be written: another connection holds SQLite's write lock
/// (as a backup tool or a stray `sqlite3` session can), so every write fails with SQLITE_BUSY
/// after the 5 s busy timeout (the full disk is OrchardSQLiteTests'). Requests that need it answer 503
/// `store_unavailable` with `Retry-After` at once and change nothing, `/health` answers 503
/// until a write goes through again, and then everything serves again without a restart.
@Suite("A store that cannot be written, over real HTTP")
struct StoreUnavailableTests {
    final class Captured: Sendable {
        let store = Mutex<SQLiteStore?>(nil)
    }

    @Test("locked: 503 store_unavailable with Retry-After, the payment answer says try again, /health 503; unlocked: served")
    func unwritable() async throws {
        let captured = Captured()
        try await ServerHarness.with(wrapStore: { store in
            captured.store.withLock { $0 = store }
            return store
        }) { server in
            let store = try #require(captured.store.withLock { $0 })
            let tests = PageCheckout.self
            let (orderId, request) = try await tests.createOrder(server)
            #expect(try await server.send("GET", "/health").status == 200)
            // Another writer on the same file, holding its lock until it rolls back.
            let intruder = try SQLiteDatabase(path: store.database.path)
            try intruder.execute("BEGIN IMMEDIATE")

            let refused = try await server.send(
                "POST", "/api/orders", body: Array(#"{"items": [{"productId": "apple", "quantity": 1}]}"#.utf8))
            let answer = refused
            #expect(
                answer.status == 503 && answer.errorCode == "store_unavailable",
                "\(answer.status) \(String(decoding: answer.body, as: UTF8.self))")
            #expect(answer.header("Retry-After") == "5")

            let pay = try await server.send(
                "POST", "/api/apple-pay/authorize",
                body: try tests.paymentBody(orderId: orderId, request: request, amount: 990))
            #expect(
                pay.status == 503 && pay.json?["status"] as? String == "failure",
                "\(pay.status) \(String(decoding: pay.body, as: UTF8.self))")
            #expect(
                String(decoding: pay.body, as: UTF8.self).contains("nothing was charged"),
                "the sheet tells the shopper to try again: \(String(decoding: pay.body, as: UTF8.self))")
            #expect(try await store.payments(orderId: orderId).isEmpty, "nothing recorded, nothing charged")

            #expect(
                try await Eventually.until(timeout: .seconds(30), every: .milliseconds(100)) {
                    let health = try await server.send("GET", "/health")
                    return health.status == 503 && health.json?["status"] as? String == "store_unavailable"
                })

            try intruder.execute("ROLLBACK")
            #expect(
                try await Eventually.until(timeout: .seconds(30), every: .milliseconds(100)) {
                    try await server.send("GET", "/health").status == 200
                })
            let paid = try await server.send(
                "POST", "/api/apple-pay/authorize",
                body: try tests.paymentBody(orderId: orderId, request: request, amount: 990))
            #expect(paid.status == 200, "\(paid.status) \(String(decoding: paid.body, as: UTF8.self))")
        }
    }
}
