import Foundation
import Logging
import OrchardCore
import OrchardPostgres
import OrchardTesting
import Testing

/// `orchard migrate` as a deployment's migration step runs it: on a new database it applies
/// every migration, a second run applies nothing, a schema from a newer Orchard is refused.
@Suite("orchard migrate")
struct MigrateCommandTests {
    /// Writes a configuration holding only `store` (merchants come later; migrate reads no more).
    static func configuration(in directory: TemporaryDirectory, _ json: [String: Any]) throws -> String {
        let path = directory.path("orchard.json")
        var file = json
        file["merchants"] = [Any]()
        try JSONSerialization.data(withJSONObject: file).write(to: URL(fileURLWithPath: path))
        return path
    }

    /// A configuration whose store is `database` on the test's PostgreSQL (its password in `PGPASS`).
    static func postgresConfiguration(in directory: TemporaryDirectory, server: PostgresServer, database: String) throws -> String {
        try configuration(
            in: directory,
            [
                "store": [
                    "postgres": [
                        "host": "127.0.0.1", "port": server.port, "database": database, "user": PostgresServer.user,
                        "password": "env:PGPASS",
                    ]
                ]
            ])
    }

    static func migrate(_ configuration: String, environment: [String: String] = [:]) async throws -> (
        status: Int32, lines: [String], stderr: String
    ) {
        let merged = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        let result = try await OrchardProcess.run(["migrate", "--config", configuration], environment: merged)
        return (result.status, String(decoding: result.stdout, as: UTF8.self).split(separator: "\n").map(String.init), result.stderr)
    }

    @Test(
        "PostgreSQL: applies every migration once, a second run applies nothing, a newer schema is refused with status 1",
        .enabled(if: PostgresServer.enabled))
    func postgres() async throws {
        let server = try await PostgresServer.shared()
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        try await server.withDatabase(poolSize: 1) { settings in
            let configuration = try Self.postgresConfiguration(in: directory, server: server, database: settings.database)
            let environment = ["PGPASS": server.password]
            let first = try await Self.migrate(configuration, environment: environment)
            #expect(first.status == 0, "\(first.stderr)")
            #expect(first.lines.filter { $0.hasPrefix("applied ") }.count == 17, "\(first.lines)")
            #expect(first.lines.first == "applied 1: orders, payments, registry, payments API and webhook outbox")
            #expect(first.lines.last == "PostgreSQL \(settings.database) on 127.0.0.1:\(server.port): schema version 17")
            let applied = try await server.query(settings.database, "SELECT count(*) FROM schema_migrations")
            #expect(applied == "17")

            let second = try await Self.migrate(configuration, environment: environment)
            #expect(second.status == 0, "\(second.stderr)")
            #expect(
                second.lines == [
                    "PostgreSQL \(settings.database) on 127.0.0.1:\(server.port): schema version 17, already current: nothing applied"
                ])
            #expect(try await server.query(settings.database, "SELECT count(*) FROM schema_migrations") == "17")

            try await server.query(
                settings.database, "INSERT INTO schema_migrations (version, description) VALUES (999, 'from the future')")
            let newer = try await Self.migrate(configuration, environment: environment)
            #expect(newer.status == 1)
            #expect(newer.lines.isEmpty, "\(newer.lines)")
            #expect(
                newer.stderr.contains("the database's schema is version 999, newer than this Orchard knows (17): run a newer Orchard"),
                "\(newer.stderr)")
            #expect(newer.stderr.split(separator: "\n").count == 1, "one line: \(newer.stderr)")
        }
    }

    @Test(
        "PostgreSQL: partner IDs differing only in letter case stop the migration, named with the command to run; resolved, it applies",
        .enabled(if: PostgresServer.enabled))
    func caseVariants() async throws {
        let server = try await PostgresServer.shared()
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        try await server.withDatabase(poolSize: 1) { settings in
            let configuration = try Self.postgresConfiguration(in: directory, server: server, database: settings.database)
            let environment = ["PGPASS": server.password]
            #expect(try await Self.migrate(configuration, environment: environment).status == 0)
            // Back to the schema before the case-insensitive index, with the variants it let in.
            for statement in [
                "DROP INDEX registered_merchants_lower", "ALTER TABLE registered_merchants DROP COLUMN claim, DROP COLUMN claimed_until",
                "DELETE FROM schema_migrations WHERE version = 9",
                """
                INSERT INTO registered_merchants (partner_id, name, encrypt_to, created_at, updated_at) VALUES
                ('ACME', 'Acme', 'x', now(), now()), ('acme', 'Acme', 'x', now(), now()), ('bystander', 'Other', 'x', now(), now())
                """,
            ] {
                try await server.query(settings.database, statement)
            }
            let refused = try await Self.migrate(configuration, environment: environment)
            #expect(refused.status == 1 && refused.lines.isEmpty, "\(refused.lines)")
            #expect(
                refused.stderr.contains("(ACME, acme)") && refused.stderr.contains("orchard domains unregister --partner-id ID"),
                "\(refused.stderr)")
            #expect(!refused.stderr.contains("bystander"), "\(refused.stderr)")
            #expect(try await server.query(settings.database, "SELECT count(*) FROM schema_migrations") == "16", "nothing applied")
            // The server migrates as it starts: it refuses alike, so it does not start.
            do {
                let store = try await PostgresStore.open(
                    settings, logger: Logger(label: "orchard.test"), eventLoops: PostgresServer.storeLoops)
                try await store.withRunning { _ in }
                Issue.record("the store opened over case variants")
            } catch {
                #expect("\(error)".contains("(ACME, acme)"), "\(error)")
            }

            // One of them unregistered (by hand here, as the previous release's server does): it applies.
            try await server.query(settings.database, "DELETE FROM registered_merchants WHERE partner_id = 'acme'")
            let resolved = try await Self.migrate(configuration, environment: environment)
            #expect(resolved.status == 0 && resolved.lines.first?.hasPrefix("applied 9: ") == true, "\(resolved.lines) \(resolved.stderr)")
        }
    }

    @Test("SQLite: creates the database's tables and indexes, and a second run creates nothing")
    func sqlite() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let configuration = try Self.configuration(in: directory, ["stateDirectory": directory.path("state")])
        let database = directory.path("state/orchard.sqlite")
        let first = try await Self.migrate(configuration)
        #expect(first.status == 0, "\(first.stderr)")
        #expect(first.lines.contains("created table orders"), "\(first.lines)")
        #expect(first.lines.contains("created index orders_by_expiry"), "\(first.lines)")
        #expect(first.lines.last == "SQLite \(database): schema current")
        #expect(FileManager.default.fileExists(atPath: database))

        let second = try await Self.migrate(configuration)
        #expect(second.status == 0, "\(second.stderr)")
        #expect(second.lines == ["SQLite \(database): schema already current: nothing applied"])
    }

    @Test("an unreachable PostgreSQL is one line and status 1")
    func unreachable() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let port = try #require(LoopbackPort.free())
        let configuration = try Self.configuration(
            in: directory, ["store": ["postgres": ["host": "127.0.0.1", "port": port, "database": "orchard", "user": "orchard"]]])
        let result = try await Self.migrate(configuration)
        #expect(result.status == 1)
        // The system's words, without NIO's nested, unbalanced parentheses.
        #expect(result.stderr == "orchard: store.postgres: cannot connect to 127.0.0.1:\(port): Connection refused\n", "\(result.stderr)")
    }
}
