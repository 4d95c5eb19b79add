import ApplePay
import Foundation
import OrchardCore
import OrchardTesting
import Testing

@testable import OrchardSQLite

/// A database written by the first release opens with every row in place and the columns,
/// tables and backfills added since.
@Suite("SQLite migrations")
struct SQLiteMigrationTests {
    @Test("a first-release database gains the added columns, the transaction ledger and the reconciler's due dates")
    func firstRelease() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.path("old.sqlite")
        let priced = try SQLiteStore.json(
            PricedOrder(
                currency: "EUR", lines: [], items: [], subtotal: 1250, shippingMethod: nil, couponCode: nil, discount: 0,
                shippingCountry: nil, total: 1250))
        do {
            let old = try SQLiteDatabase(path: path)
            try old.executeScript(
                """
                CREATE TABLE orders (id TEXT PRIMARY KEY, merchant TEXT NOT NULL, state TEXT NOT NULL, priced TEXT NOT NULL,
                    application_data BLOB NOT NULL, created_at INTEGER NOT NULL);
                CREATE TABLE payments (id TEXT PRIMARY KEY, order_id TEXT NOT NULL REFERENCES orders(id),
                    transaction_id TEXT NOT NULL UNIQUE, state TEXT NOT NULL, amount INTEGER NOT NULL, currency TEXT NOT NULL,
                    network TEXT, last_four TEXT NOT NULL, processor_reference TEXT, created_at INTEGER NOT NULL);
                CREATE TABLE refunds (id TEXT PRIMARY KEY, payment_id TEXT NOT NULL REFERENCES payments(id), amount INTEGER NOT NULL,
                    currency TEXT NOT NULL, state TEXT NOT NULL, reference TEXT NOT NULL UNIQUE, idempotency_key TEXT NOT NULL,
                    sends INTEGER NOT NULL, processor_reference TEXT, processor_code TEXT, processor_message TEXT,
                    created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL, UNIQUE (payment_id, idempotency_key));
                """)
            try old.execute(
                "INSERT INTO orders VALUES ('order-1', 'merchant.test', 'authorizing', \(priced), \([UInt8]([1, 2])), 1000)")
            try old.execute(
                "INSERT INTO payments VALUES ('pay-1', 'order-1', 'tx-1', 'unknown', 1250, 'EUR', 'visa', '4242', NULL, 1000)")
        }
        let store = try SQLiteStore(path: path)
        let payment = try #require(try await store.payment(id: "pay-1"))
        #expect(payment.amount == 1250 && payment.state == .unknown && payment.transactionId == "tx-1")
        #expect(payment.processor == "record" && payment.sends == 1 && payment.links.isEmpty)
        #expect(payment.updatedAt == payment.createdAt, "a row from before updated_at last changed when created")
        #expect(payment.nextReconcileAt == Date(timeIntervalSince1970: 0), "an unknown payment from before the reconciler is due now")
        let order = try #require(try await store.order(id: "order-1"))
        #expect(order.priceVersion == 1 && order.expiresAt == nil && order.priced.total == 1250)
        let ledger = try await store.rows("SELECT transaction_id, payment_id FROM payment_transactions")
        #expect(ledger.map { [$0.text("transaction_id"), $0.text("payment_id")] } == [["tx-1", "pay-1"]])
        let refundColumns = try await store.rows("PRAGMA table_info(refunds)").map { $0.text("name") }
        #expect(refundColumns.suffix(3) == ["leased_until", "last_sent_at", "released"])
        // Opening again changes nothing.
        _ = try SQLiteStore(path: path)
        #expect(try await store.rows("SELECT COUNT(*) AS count FROM payment_transactions").first?.int("count") == 1)
    }

    @Test("`orchard migrate`'s migration names what it created: a column added to an old table, then nothing")
    func migrateReports() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.path("old.sqlite")
        do {
            let old = try SQLiteDatabase(path: path)
            try old.executeScript(
                """
                CREATE TABLE orders (id TEXT PRIMARY KEY, merchant TEXT NOT NULL, state TEXT NOT NULL, priced TEXT NOT NULL,
                    application_data BLOB NOT NULL, created_at INTEGER NOT NULL, expires_at INTEGER);
                """)
        }
        let created = try SQLiteStore.migrate(path: path)
        #expect(created.contains("column orders.price_version"), "\(created)")
        #expect(!created.contains("table orders") && created.contains("table payments") && created.contains("index orders_by_expiry"))
        #expect(try SQLiteStore.migrate(path: path).isEmpty, "a second run creates nothing")
    }
}

extension SQLiteMigrationTests {
    static func merchant(_ id: String, domain: String) -> RegisteredMerchant {
        RegisteredMerchant(
            partnerIdentifier: id, name: "Acme", encryptTo: "merchant.platform", merchantUrl: nil, domains: [domain],
            createdAt: Date(timeIntervalSince1970: 1000), updatedAt: Date(timeIntervalSince1970: 1000))
    }

    @Test("a database holding partner IDs that differ only in letter case is refused, naming them and the command; then migrates")
    func caseVariantsRefused() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.path("orchard.sqlite")
        do {
            // A database from before the index, with the variants it let in.
            let old = try SQLiteDatabase(path: path)
            try SQLiteStore.migrate(old)
            try old.executeScript("DROP INDEX registered_merchants_lower")
            for (id, domain) in [("ACME", "one.example"), ("acme", "two.example"), ("bystander", "three.example")] {
                try old.execute(
                    "INSERT INTO registered_merchants (partner_id, name, encrypt_to, created_at, updated_at) VALUES (\(id), 'Acme', 'x', 1, 1)"
                )
                try old.execute("INSERT INTO registered_domains (domain, partner_id, position) VALUES (\(domain), \(id), 0)")
            }
        }
        var refusal = ""
        #expect(throws: ConfigurationError.self) {
            do {
                _ = try SQLiteStore.migrate(path: path)
            } catch {
                refusal = "\(error)"
                throw error
            }
        }
        #expect(refusal.contains("(ACME, acme)") && refusal.contains("orchard domains unregister --partner-id"), "\(refusal)")
        #expect(!refusal.contains("bystander"), "\(refusal)")
        #expect(throws: ConfigurationError.self, "the store the server opens refuses too") { try SQLiteStore(path: path) }

        // One of them unregistered (here by hand, as the previous release's server does): it migrates.
        try SQLiteDatabase(path: path).execute("DELETE FROM registered_domains WHERE partner_id = 'acme'")
        try SQLiteDatabase(path: path).execute("DELETE FROM registered_merchants WHERE partner_id = 'acme'")
        #expect(try SQLiteStore.migrate(path: path) == ["index registered_merchants_lower"])
        let store = try SQLiteStore(path: path)
        let refused = await TestRecords.refusal { try await store.saveRegistration(Self.merchant("Acme", domain: "four.example")) }
        #expect(refused == .identifierTaken)
    }

    @Test("two stores on one file save ACME and acme at the same moment: exactly one is registered")
    func caseVariantsFromTwoStores() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.path("orchard.sqlite")
        let stores = [try SQLiteStore(path: path), try SQLiteStore(path: path)]
        let outcomes = await withTaskGroup(of: CoreError.Code?.self) { group in
            for (index, store) in stores.enumerated() {
                group.addTask {
                    await TestRecords.refusal {
                        try await store.saveRegistration(Self.merchant(index == 0 ? "ACME" : "acme", domain: "shop\(index).example"))
                    }
                }
            }
            return await group.reduce(into: []) { $0.append($1) }
        }
        #expect(outcomes.filter { $0 == nil }.count == 1 && outcomes.contains(.identifierTaken), "\(outcomes)")
        #expect(try await stores[0].registeredMerchants().count == 1)
        #expect(try await stores[1].registeredMerchants().count == 1)
    }
}
