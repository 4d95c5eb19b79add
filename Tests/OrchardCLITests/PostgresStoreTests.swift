import Foundation
import Logging
import OrchardConfiguration
import OrchardCore
import OrchardIntegrationTesting
import OrchardPostgres
import OrchardRuntime
import OrchardServer
import OrchardServerTesting
import OrchardServices
import OrchardTesting
import Testing

/// The PostgreSQL store as the server and the CLI meet it: its `store` configuration, and
/// `orchard keys`/`doctor` on it. Its migrations and connection failures are OrchardPostgresTests';
/// its behaviour is the contract suites' (they run on PostgreSQL too).
@Suite("PostgreSQL store: configuration, and the commands on it")
struct PostgresStoreTests {
    static let enabled = PostgresServer.enabled

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
            settings.password?.value == "s3cret" && settings.tls == .verifyFull, "a remote host verifies TLS")
        #expect(settings.poolSize == ServerConfiguration.defaultPoolSize(cores: ProcessInfo.processInfo.activeProcessorCount))
        #expect([1, 2, 8, 64].map(ServerConfiguration.defaultPoolSize) == [4, 4, 16, 32], "two per core, 4 to 32")

        var local = base
        local["host"] = "127.0.0.1"
        local["password"] = nil
        guard case .postgres(let loopback) = try Self.load(try Self.configuration(directory, postgres: local)).get().store else { return }
        #expect(loopback.tls == .disable && loopback.password == nil, "localhost needs no TLS by default")
        #expect(loopback.limits == PostgresSettings.SessionLimits(), "the session limits' defaults")
        let limited = local.merging([
            "statementTimeoutMilliseconds": 4000, "lockTimeoutMilliseconds": 1000, "idleInTransactionTimeoutMilliseconds": 9000,
            "callTimeoutMilliseconds": 6000, "keepaliveIdleSeconds": 20, "keepaliveIntervalSeconds": 3, "keepaliveCount": 4,
        ]) { $1 }
        guard case .postgres(let bounded) = try Self.load(try Self.configuration(directory, postgres: limited)).get().store else { return }
        #expect(
            bounded.limits
                == .init(
                    statementTimeout: .seconds(4), lockTimeout: .seconds(1), idleInTransactionTimeout: .seconds(9),
                    callTimeout: .seconds(6),
                    keepaliveIdle: .seconds(20), keepaliveInterval: .seconds(3), keepaliveCount: 4))

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
            (base.merging(["lockTimeoutMilliseconds": 50]) { $1 }, "store.postgres.lockTimeoutMilliseconds must be 100–60000"),
            (base.merging(["keepaliveCount": 0]) { $1 }, "store.postgres.keepaliveCount must be 1–30"),
            (
                base.merging(["statementTimeoutMilliseconds": 9000]) { $1 },
                "store.postgres.callTimeoutMilliseconds must be more than statementTimeoutMilliseconds"
            ),
            (base, "environment variable PGPASS for store.postgres.password"),
        ]
        for (postgres, expected) in problems {
            let message = Self.loadError(try Self.configuration(directory, postgres: postgres))
            #expect(message?.contains(expected) == true, "\(message ?? "loaded")")
        }
        let noVault = Self.loadError(try Self.configuration(directory, postgres: local, vaultKey: false))
        #expect(noVault?.contains("store.postgres needs payments.vaultKey, the same on every instance") == true, "\(noVault ?? "loaded")")
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
            // After the configuration's line (serve's loader), the store's.
            let store = String(decoding: doctor.stdout, as: UTF8.self).split(separator: "\n").dropFirst().first.map(String.init)
            #expect(
                store
                    == "✓ store PostgreSQL: \(settings.database) on 127.0.0.1:\(server.port) (TLS disable) answers; schema version 17, this Orchard's",
                "\(doctor.stdout)")
            let registered = String(decoding: doctor.stdout, as: UTF8.self).split(separator: "\n").dropFirst(2).first.map(String.init)
            #expect(registered == "✓ store registered settings: no registered merchants yet", "\(doctor.stdout)")
            try await Self.sealedSettingsWithoutKey(path: path, settings: settings, environment: environment)

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
            // In serve's words, as `keys list` says it above.
            #expect(
                String(decoding: refused.stdout, as: UTF8.self).split(separator: "\n").dropFirst().first?.hasPrefix(
                    "✗ store PostgreSQL: store.postgres: 127.0.0.1:\(server.port) refused the login") == true, "\(refused.stdout)")
        }
    }

    /// Sealed settings in the registry and no `platformIntegrator.settingsKey`: serve's own load
    /// refuses the store (only its count is looked at before the key, so the bytes are any), and
    /// doctor says it in the same words, read from PostgreSQL.
    static func sealedSettingsWithoutKey(path: String, settings: PostgresSettings, environment: [String: String]) async throws {
        let store = try await PostgresStore.open(settings, logger: Logger(label: "orchard.test"), eventLoops: PostgresServer.storeLoops)
        let configuration = try Self.load(path, environment: environment).get()
        let refusal = try await store.withRunning { store in
            try await store.saveSealedMerchantSettings(
                partnerIdentifier: "merchant.dev.orchard.tenant", sealed: Array(repeating: 7, count: 48), at: Date())
            do throws(ConfigurationError) {
                _ = try await configuration.loadRegisteredSettings(store: store)
                return nil as String?
            } catch {
                return error.message
            }
        }
        let message = try #require(refusal, "serve's load accepted sealed settings without a key")
        let doctor = try await OrchardProcess.run(["doctor", "--config", path], environment: environment)
        #expect(doctor.status == 1)
        let line = String(decoding: doctor.stdout, as: UTF8.self).split(separator: "\n").dropFirst(2).first.map(String.init)
        #expect(line == "✗ store registered settings: \(message)", "\(doctor.stdout)")
    }
}
