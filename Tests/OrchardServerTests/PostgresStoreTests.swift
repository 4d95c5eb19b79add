import Foundation
import Logging
import NIOPosix
import OrchardCore
import OrchardPostgres
import OrchardRuntime
import OrchardServer
import OrchardTesting
import PostgresNIO
import Testing

/// What only the PostgreSQL store has: its `store` configuration, migrations shared by
/// instances starting together, and one-line connection failures. The store's behaviour is the
/// contract suites' (they run on PostgreSQL too).
@Suite("PostgreSQL store: configuration, migrations, connection failures")
struct PostgresStoreTests {
    static let enabled = StoreContractTests.Kind.enabled.contains(.postgres)

    /// A valid configuration with `store` set to what `postgres` holds (raw JSON, so unknown keys get through).
    static func configuration(_ directory: TemporaryDirectory, postgres: [String: Any]?, vaultKey: Bool = true) throws -> String {
        var file = try ServerHarness.configurationFile(gatewayPort: 9, directory: directory)
        if vaultKey {
            try directory.write("vault.key", Array(String(repeating: "5a", count: 32).utf8))
            file.payments?.vaultKey = "vault.key"
        }
        var json = try #require(try JSONSerialization.jsonObject(with: try JSONEncoder().encode(file)) as? [String: Any])
        if let postgres { json["store"] = ["postgres": postgres] }
        try JSONSerialization.data(withJSONObject: json).write(to: directory.url.appendingPathComponent("orchard.json"))
        return directory.path("orchard.json")
    }

    static func load(_ path: String, environment: [String: String] = [:]) -> Result<ServerConfiguration, ConfigurationError> {
        Result { () throws(ConfigurationError) in try ServerConfiguration.load(path: path, environment: environment) }
    }

    static func loadError(_ path: String, environment: [String: String] = [:]) -> String? {
        if case .failure(let error) = load(path, environment: environment) { return error.message }
        return nil
    }

    @Test("no store section is SQLite; store.postgres is read and checked, unknown keys refused")
    func configuration() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        guard case .sqlite = try Self.load(try Self.configuration(directory, postgres: nil)).get().store else {
            Issue.record("no store section must mean SQLite")
            return
        }
        let base: [String: Any] = ["host": "db.internal", "database": "orchard", "user": "orchard", "password": "env:PGPASS"]
        let loaded = try Self.load(try Self.configuration(directory, postgres: base), environment: ["PGPASS": "s3cret"]).get()
        guard case .postgres(let settings) = loaded.store else {
            Issue.record("store.postgres must select PostgreSQL")
            return
        }
        #expect(settings.endpoint == .tcp(host: "db.internal", port: 5432) && settings.database == "orchard" && settings.user == "orchard")
        #expect(
            settings.password?.value == "s3cret" && settings.tls == .verifyFull && settings.poolSize == 10, "a remote host verifies TLS")

        var local = base
        local["host"] = "127.0.0.1"
        local["password"] = nil
        guard case .postgres(let loopback) = try Self.load(try Self.configuration(directory, postgres: local)).get().store else { return }
        #expect(loopback.tls == .disable && loopback.password == nil, "localhost needs no TLS by default")

        var socket = base
        socket["host"] = nil
        socket["socket"] = directory.url.path
        socket["port"] = 5433
        guard
            case .postgres(let unix) = try Self.load(try Self.configuration(directory, postgres: socket), environment: ["PGPASS": "x"])
                .get()
                .store
        else { return }
        #expect(unix.endpoint == .socket(path: directory.path(".s.PGSQL.5433")) && unix.tls == .disable, "a folder names its socket file")

        let problems: [([String: Any], String)] = [
            (base.merging(["hots": "x"]) { $1 }, "store.postgres.hots: not a setting"),
            (base.merging(["tls": ["mode": "verify-full", "cafile": "x"]]) { $1 }, "store.postgres.tls.cafile: not a setting"),
            (base.merging(["socket": "/run/pg"]) { $1 }, "give either host (and port) or socket"),
            (base.merging(["tls": ["mode": "prefer"]]) { $1 }, "store.postgres.tls.mode must be disable, require or verify-full"),
            (base.merging(["tls": ["mode": "require", "caFile": "ca.pem"]]) { $1 }, "caFile is read only with mode verify-full"),
            (base.merging(["poolSize": 0]) { $1 }, "store.postgres.poolSize must be 1–100"),
            (base.merging(["database": " "]) { $1 }, "store.postgres.database must not be empty"),
            (base.merging(["port": 70_000]) { $1 }, "store.postgres.port must be 1–65535"),
            (base, "environment variable PGPASS for store.postgres.password"),
        ]
        for (postgres, expected) in problems {
            let message = Self.loadError(try Self.configuration(directory, postgres: postgres))
            #expect(message?.contains(expected) == true, "\(message ?? "loaded")")
        }
        let noVault = Self.loadError(try Self.configuration(directory, postgres: local, vaultKey: false))
        #expect(noVault?.contains("store.postgres needs payments.vaultKey, the same on every instance") == true, "\(noVault ?? "loaded")")
    }

    @Test(
        "instances starting together on a new database migrate it once; a skipped migration runs; a newer schema is refused",
        .enabled(if: enabled))
    func migrations() async throws {
        let server = try await PostgresServer.shared()
        try await server.withDatabase(poolSize: 2) { settings in
            let stores = try await StoreConcurrencyContractTests.concurrently(4) { _ in
                try await PostgresStore.open(settings, logger: Logger(label: "orchard.test"), eventLoops: StoreContractTests.postgresLoops)
            }
            for store in stores {
                let keys = try await store.withRunning { store in try await store.apiKeys(merchantIdentifier: nil) }
                #expect(keys.isEmpty)
            }
            #expect(
                try await server.query(settings.database, "SELECT version FROM schema_migrations ORDER BY version") == "1\n2\n3\n4\n5\n6")
            // A migration the database lacks below its highest version still runs (set, not maximum).
            try await server.query(settings.database, "ALTER TABLE payments DROP COLUMN operation_until")
            try await server.query(settings.database, "DELETE FROM schema_migrations WHERE version = 5")
            let reopened = try await PostgresStore.open(
                settings, logger: Logger(label: "orchard.test"), eventLoops: StoreContractTests.postgresLoops)
            try await reopened.withRunning { _ in }
            #expect(
                try await server.query(settings.database, "SELECT version FROM schema_migrations ORDER BY version") == "1\n2\n3\n4\n5\n6")
            #expect(
                try await server.query(
                    settings.database,
                    "SELECT count(*) FROM information_schema.columns WHERE table_name = 'payments' AND column_name = 'operation_until'")
                    == "1")
            try await server.query(
                settings.database, "INSERT INTO schema_migrations (version, description) VALUES (999, 'from the future')")
            let refused = await Self.openError(settings)
            #expect(refused?.contains("schema is version 999, newer than this Orchard knows (6)") == true, "\(refused ?? "opened")")
        }
    }

    static func openError(_ settings: PostgresSettings) async -> String? {
        do {
            _ = try await PostgresStore.open(settings, logger: Logger(label: "orchard.test"), eventLoops: StoreContractTests.postgresLoops)
            return nil
        } catch {
            return error.message
        }
    }

    @Test("a wrong password, a missing database and a closed port are one line each", .enabled(if: enabled))
    func connectionFailures() async throws {
        let server = try await PostgresServer.shared()
        try await server.withDatabase(poolSize: 1) { good in
            var wrongPassword = good
            wrongPassword.password = Secret("not-the-password")
            let login = await Self.openError(wrongPassword)
            #expect(login == "127.0.0.1:\(server.port) refused the login: password authentication failed for user \"orchard\"")
            #expect(login?.contains("not-the-password") == false)
            var missing = good
            missing.database = "t_missing"
            #expect(await Self.openError(missing)?.contains("database \"t_missing\" does not exist") == true)
            var closed = good
            closed.endpoint = .tcp(host: "127.0.0.1", port: try PostgresServer.freePort())
            let refused = await Self.openError(closed)
            #expect(refused?.hasPrefix("cannot connect to 127.0.0.1:") == true && refused?.contains("refused") == true, "\(refused ?? "")")
            var tls = good
            tls.tls = .require
            #expect(await Self.openError(tls)?.contains("does not offer TLS") == true, "the test cluster has no TLS")
        }
    }

    @Test("orchard keys and doctor work on a configured PostgreSQL store, its password read from the environment", .enabled(if: enabled))
    func commandLine() async throws {
        let server = try await PostgresServer.shared()
        try await server.withDatabase(poolSize: 1) { settings in
            let directory = try TemporaryDirectory()
            defer { directory.remove() }
            let path = try Self.configuration(
                directory,
                postgres: [
                    "host": "127.0.0.1", "port": server.port, "database": settings.database, "user": PostgresServer.user,
                    "password": "env:ORCHARD_TEST_PGPASSWORD",
                ])
            let environment = ["ORCHARD_TEST_PGPASSWORD": server.password, "PATH": "/usr/bin:/bin"]
            let created = try await OrchardProcess.run(
                ["keys", "create", "--config", path, "--merchant", TestMaterial.merchantIdentifier], environment: environment)
            #expect(created.status == 0, "\(created.stderr)")
            let listed = try await OrchardProcess.run(["keys", "list", "--config", path], environment: environment)
            #expect(String(decoding: listed.stdout, as: UTF8.self).contains(TestMaterial.merchantIdentifier))
            #expect(try await server.query(settings.database, "SELECT count(*) FROM api_keys") == "1", "the key is in PostgreSQL")

            let doctor = try await OrchardProcess.run(["doctor", "--config", path], environment: environment)
            let store = String(decoding: doctor.stdout, as: UTF8.self).split(separator: "\n").first.map(String.init)
            #expect(
                store
                    == "✓ store PostgreSQL: \(settings.database) on 127.0.0.1:\(server.port) (TLS disable) answers; schema version 6, this Orchard's",
                "\(doctor.stdout)")

            let wrong = try await OrchardProcess.run(
                ["keys", "list", "--config", path], environment: ["ORCHARD_TEST_PGPASSWORD": "wrong", "PATH": "/usr/bin:/bin"])
            #expect(wrong.status == 1)
            #expect(
                wrong.stderr
                    == "orchard: store.postgres: 127.0.0.1:\(server.port) refused the login: password authentication failed for user \"orchard\"\n"
            )
            let refused = try await OrchardProcess.run(
                ["doctor", "--config", path], environment: ["ORCHARD_TEST_PGPASSWORD": "wrong", "PATH": "/usr/bin:/bin"])
            #expect(refused.status == 1)
            #expect(
                String(decoding: refused.stdout, as: UTF8.self).hasPrefix(
                    "✗ store PostgreSQL: 127.0.0.1:\(server.port) refused the login"), "\(refused.stdout)")
        }
    }
}

/// Leases as two instances meet them: what another instance's open transaction holds is passed
/// by at once, neither waited for nor handed out twice.
@Suite("PostgreSQL store: leases skip rows another transaction holds")
struct PostgresLeaseLockTests {
    /// Runs `body` while another connection holds `FOR UPDATE` locks on the rows `lock` selects,
    /// then lets them go. `body` waiting for those rows (no SKIP LOCKED) is a failure, not a hang.
    static func whileLocked<T: Sendable>(
        _ settings: PostgresSettings, port: Int, password: String, _ lock: PostgresQuery,
        _ body: @escaping @Sendable () async throws -> T
    ) async throws -> T? {
        let connection = try await PostgresConnection.connect(
            on: StoreContractTests.postgresLoops.any(),
            configuration: .init(
                host: "127.0.0.1", port: port, username: PostgresServer.user, password: password, database: settings.database,
                tls: .disable),
            id: 1, logger: Logger(label: "orchard.test"))
        let logger = Logger(label: "orchard.test")
        try await connection.query("BEGIN", logger: logger)
        let locked = try await connection.query(lock, logger: logger).collect()
        #expect(locked.count == 1, "one row held")
        let result = try await withThrowingTaskGroup(of: T?.self) { group in
            group.addTask { try await body() }
            group.addTask {
                // Waiting this long means waiting for the lock: let go of it, so the call ends.
                try? await Task.sleep(for: .seconds(30))
                _ = try? await connection.query("ROLLBACK", logger: logger)
                return nil
            }
            let first = try await group.next() ?? nil
            group.cancelAll()
            return first
        }
        _ = try? await connection.query("ROLLBACK", logger: logger)
        try await connection.close()
        #expect(result != nil, "the call waited for the held row instead of passing it by")
        return result
    }

    @Test(
        "webhook events, payments, refunds and expiring orders held by another transaction are passed by",
        .enabled(if: PostgresStoreTests.enabled))
    func skipLocked() async throws {
        let server = try await PostgresServer.shared()
        try await server.withDatabase(poolSize: 4) { settings in
            let opened = try await PostgresStore.open(
                settings, logger: Logger(label: "orchard.test"), eventLoops: StoreContractTests.postgresLoops)
            try await opened.withRunning { store in try await Self.passesLockedRowsBy(store, settings: settings, server: server) }
        }
    }

    /// The rows `skipLocked` holds in another transaction, each passed by while held and leased once let go.
    static func passesLockedRowsBy(_ store: PostgresStore, settings: PostgresSettings, server: PostgresServer) async throws {
        let shop = ShopStoreContractTests.self
        let events = try await StoreConcurrencyContractTests.authorizedEvents(store, count: 3)
        let held = try #require(events.first)
        let leased = try await Self.whileLocked(
            settings, port: server.port, password: server.password, "SELECT id FROM webhook_events WHERE id = \(held) FOR UPDATE"
        ) { try await store.leaseWebhookEvents(at: shop.at(100), until: shop.at(160), limit: 10).map(\.id) }
        #expect(leased?.sorted() == Array(events.dropFirst()).sorted())
        #expect(
            try await store.leaseWebhookEvents(at: shop.at(100), until: shop.at(160), limit: 10).map(\.id) == [held], "let go: leased")

        for index in 0..<2 {
            try await store.insert(try StoreContractTests.order("u\(index)"))
            _ = try await store.claimPayment(shop.claim("u\(index)", payment: "unknown\(index)"))
            let unknown = try await store.transition(
                PaymentTransition(
                    paymentId: "unknown\(index)", orderId: "u\(index)", move: PaymentLifecycle.move(.noAnswer), at: shop.at(10),
                    nextReconcileAt: shop.at(20)))
            #expect(unknown?.state == .unknown)
        }
        let payments = try await Self.whileLocked(
            settings, port: server.port, password: server.password, "SELECT id FROM payments WHERE id = 'unknown0' FOR UPDATE"
        ) { try await store.leasePaymentsForReconciliation(at: shop.at(100), until: shop.at(160), limit: 10).map(\.id) }
        #expect(payments == ["unknown1"])

        _ = try await shop.settled(store, order: "s", payment: "settled")
        var refunds: [String] = []
        for index in 0..<2 {
            let refund = try await store.claimRefund(shop.refund("settled", 10, key: "k\(index)", at: index))
            _ = try await store.finishRefund(id: refund.id, state: .unknown, outcome: nil, at: shop.at(index))
            refunds.append(refund.id)
        }
        let reconciled = try await Self.whileLocked(
            settings, port: server.port, password: server.password, "SELECT id FROM refunds WHERE id = \(refunds[0]) FOR UPDATE"
        ) {
            try await store.leaseRefundsToReconcile(
                at: shop.at(100), until: shop.at(160), pendingBefore: shop.at(70), maximumSends: 8, limit: 10
            ).map(\.id)
        }
        #expect(reconciled == [refunds[1]])

        for index in 0..<2 {
            let (request, order) = try shop.request("r\(index)", key: "k\(index)", expiresIn: 10)
            _ = try await store.createPaymentRequest(request, order: order)
        }
        let expired = try await Self.whileLocked(
            settings, port: server.port, password: server.password, "SELECT id FROM orders WHERE id = 'r0' FOR UPDATE"
        ) { try await store.expireOrders(at: shop.at(100), limit: 10) }
        #expect(expired == ["r1"], "an order being claimed right now is left for the next pass")
        #expect(try await store.expireOrders(at: shop.at(100), limit: 10) == ["r0"])
    }
}
