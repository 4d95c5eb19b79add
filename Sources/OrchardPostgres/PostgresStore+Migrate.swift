import Logging
import NIOCore
import NIOPosix
import OrchardCore
import PostgresNIO

extension PostgresStore {
    /// One migration a run applied: its version and what it adds.
    public struct AppliedMigration: Sendable, Equatable {
        public var version: Int
        public var description: String
    }

    /// The newest schema version this Orchard knows.
    public static var schemaVersion: Int { PostgresMigrations.all.last?.version ?? 0 }

    /// Connects, brings the schema to ``schemaVersion`` and disconnects: what `orchard migrate`
    /// runs, and ``open(_:logger:eventLoops:)`` before its pool starts. Returns the migrations
    /// applied, in order (none when the schema was current); a schema from a newer Orchard is
    /// refused. A failure is one line naming what to fix.
    public static func migrate(
        _ settings: PostgresSettings, logger: Logger, eventLoops: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton
    ) async throws(ConfigurationError) -> [AppliedMigration] {
        let connection = try await connectOnce(settings, logger: logger, eventLoops: eventLoops)
        do {
            let versions = try await PostgresMigrations.migrate(connection, logger: logger)
            try? await connection.close()
            return PostgresMigrations.all.filter { versions.contains($0.version) }.map {
                AppliedMigration(version: $0.version, description: $0.description)
            }
        } catch {
            try? await connection.close()
            if let error = error as? ConfigurationError { throw error }
            throw ConfigurationError("\(settings.location): the schema could not be migrated: \(describe(error))")
        }
    }
}
