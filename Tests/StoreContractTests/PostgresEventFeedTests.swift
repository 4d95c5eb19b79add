import Foundation
import Logging
import OrchardCore
import OrchardPostgres
import OrchardTesting
import PostgresNIO
import Testing

/// The event feed against a transaction still open: an event it inserted must not be passed by
/// because a later transaction's event committed first and was read.
@Suite("PostgreSQL store: the event feed waits for transactions still open")
struct PostgresEventFeedTests {
    @Test(
        "an event of a transaction still open holds back the events written after it, until it commits; then both, in order",
        .enabled(if: PostgresServer.enabled))
    func openTransaction() async throws {
        let server = try await PostgresServer.shared()
        try await server.withDatabase(poolSize: 4) { settings in
            let opened = try await PostgresStore.open(
                settings, logger: Logger(label: "orchard.test"), eventLoops: PostgresServer.storeLoops)
            try await opened.withRunning { store in try await Self.holdsBack(store, settings: settings, server: server) }
        }
    }

    static func holdsBack(_ store: PostgresStore, settings: PostgresSettings, server: PostgresServer) async throws {
        let feed = EventFeedContractTests.self
        let merchant = feed.a
        let before = try await feed.write(store, [merchant])
        #expect(try await feed.page(store, merchant, after: nil, count: 1)?.map(\.id) == before.map(\.id))

        // Another connection inserts an event and keeps its transaction open.
        let logger = Logger(label: "orchard.test")
        let connection = try await PostgresConnection.connect(
            on: PostgresServer.storeLoops.any(),
            configuration: .init(
                host: "127.0.0.1", port: server.port, username: PostgresServer.user, password: server.password,
                database: settings.database, tls: .disable),
            id: 1, logger: logger)
        let held = "evt_" + RecordIdentifier.random()
        try await connection.query("BEGIN", logger: logger)
        try await connection.query(
            """
            INSERT INTO webhook_events (id, merchant, type, payload, created_at, state, attempts, next_attempt_at)
            VALUES (\(held), \(merchant), 'domain.verification_failed', '\\x7b7d'::bytea, now(), 'pending', 0, now())
            """, logger: logger)

        // A later transaction writes and commits an event: the outbox has it, the feed not yet.
        let later = try await feed.write(store, [merchant], from: 1)
        #expect(try await store.webhookEvent(id: later[0].id) != nil)
        #expect(try await store.webhookEventFeed(of: merchant, after: before[0].id, limit: 50)?.isEmpty == true)
        #expect(try await store.webhookEventFeed(of: merchant, after: nil, limit: 50)?.map(\.id) == before.map(\.id))

        try await connection.query("COMMIT", logger: logger)
        try await connection.close()
        let page = try await feed.page(store, merchant, after: before[0].id, count: 2)
        #expect(page?.map(\.id) == [held, later[0].id], "the held event first: the later one was never read before it")
    }
}
