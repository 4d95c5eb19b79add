import Foundation
import Logging
import OrchardConfiguration
import OrchardCore
import OrchardPostgres
import OrchardSQLite
import OrchardServer
import OrchardServices

/// `orchard migrate`: brings the configured store's schema to this Orchard's, and says what it
/// did, one line each. PostgreSQL applies its numbered migrations (none when current; a schema
/// from a newer Orchard is refused); SQLite creates the tables, columns and indexes it lacks.
public func migrateStore(_ file: ConfigurationFile, folder: String, environment: [String: String]) async throws(ConfigurationError)
    -> [String]
{
    let (store, stateDirectory) = try file.storeSettings(relativeTo: folder, environment: environment)
    switch store {
    case .postgres(let settings):
        var logger = Logger(label: "orchard.migrate")
        logger.logLevel = .critical
        let applied: [PostgresStore.AppliedMigration]
        do {
            applied = try await PostgresStore.migrate(settings, logger: logger)
        } catch {
            throw ConfigurationError("store.postgres: \(error.message)")
        }
        let place = "PostgreSQL \(settings.database) on \(settings.location)"
        let current = "\(place): schema version \(PostgresStore.schemaVersion)"
        guard !applied.isEmpty else { return ["\(current), already current: nothing applied"] }
        return applied.map { "applied \($0.version): \($0.description)" } + ["\(current)"]
    case .sqlite:
        let path = URL(fileURLWithPath: stateDirectory).appendingPathComponent("orchard.sqlite").path
        let created: [String]
        do {
            try FileManager.default.createDirectory(
                atPath: stateDirectory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            created = try SQLiteStore.migrate(path: path)
        } catch {
            throw ConfigurationError("\(path): cannot migrate the database (\(error))")
        }
        guard !created.isEmpty else { return ["SQLite \(path): schema already current: nothing applied"] }
        return created.map { "created \($0)" } + ["SQLite \(path): schema current"]
    }
}
