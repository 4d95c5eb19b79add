import Foundation
import Logging
import OrchardConfiguration
import OrchardCore
import OrchardIntegrationTesting
import OrchardPostgres
import OrchardServer
import OrchardServerTesting
import OrchardServices
import OrchardTesting
import ServiceLifecycle
import Synchronization
import Testing

@testable import OrchardRuntime

/// `runServer` ends by throwing, never by exiting the process, and the store lives as long as the
/// services that use it.
@Suite("Runtime: failures are thrown; the store outlives the drain")
struct RuntimeLifetimeTests {
    static var quiet: Logger {
        var logger = Logger(label: "orchard.test")
        logger.logLevel = .critical
        return logger
    }

    @Test("a store that cannot be opened is runServer's thrown one-line error, not an exit of the process")
    func unopenableStore() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        var file = try ServerHarness.configurationFile(gatewayPort: 9, directory: directory)
        try directory.write("blocker", Array("a file where the state folder's parent should be".utf8))
        file.stateDirectory = "blocker/state"
        let configuration = try ServerConfiguration.resolve(file, relativeTo: directory.url.path, environment: [:])
        do {
            try await runServer(configuration, logger: Self.quiet)
            Issue.record("the server started without its store")
        } catch let error as ConfigurationError {
            #expect(error.message.hasPrefix("\(directory.path("blocker/state/orchard.sqlite")): cannot open the database"), "\(error)")
        }
    }

    @Test(
        "the PostgreSQL store answers for the server's whole drain, and its connections close after it",
        .enabled(if: PostgresServer.enabled))
    func storeOutlivesDrain() async throws {
        let server = try await PostgresServer.shared()
        try await server.withDatabase(poolSize: 2) { settings in
            let store = try await PostgresStore.open(settings, logger: Self.quiet, eventLoops: PostgresServer.storeLoops)
            let draining = DrainingServer(store: store)
            let connections = "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()"
            try await withThrowingTaskGroup(of: Void.self) { tasks in
                let (groups, made) = AsyncStream<ServiceGroup>.makeStream()
                tasks.addTask {
                    try await runUntilSignalled(
                        servicesInShutdownOrder(store: store, metrics: nil, server: draining), drainTimeout: .seconds(60),
                        activity: ServerActivity(), logger: Self.quiet, signals: []
                    ) { group in
                        made.yield(group)
                        made.finish()
                    }
                }
                var iterator = groups.makeAsyncIterator()
                let group = try #require(await iterator.next())
                await draining.serving()
                let held = Int(try await server.query(settings.database, connections)) ?? 0
                #expect(held >= 1, "the pool holds a connection while serving")
                await group.triggerGracefulShutdown()
                try await tasks.waitForAll()
            }
            let (answered, failures) = draining.outcomes.withLock { ($0.answered, $0.failures) }
            #expect(answered == DrainingServer.drainQueries && failures.isEmpty, "\(failures)")
            var open = ""
            let closed = try await Eventually.until(every: .milliseconds(50)) {
                open = try await server.query(settings.database, connections)
                return open == "0"
            }
            #expect(closed, "the store's connections are closed once the group has stopped: \(open) open")
        }
    }
}

/// Stands for the public server: answers from the store until told to shut down, then keeps
/// using it, as requests in flight and a background pass's last writes do while draining.
final class DrainingServer: Service, Sendable {
    static let drainQueries = 20
    let store: PostgresStore
    let outcomes = Mutex<(answered: Int, failures: [String])>((0, []))
    private let started: AsyncStream<Void>
    private let signal: AsyncStream<Void>.Continuation

    init(store: PostgresStore) {
        self.store = store
        (started, signal) = AsyncStream<Void>.makeStream()
    }

    func run() async throws {
        _ = try await store.apiKeys(merchantIdentifier: nil)
        signal.finish()
        try await gracefulShutdown()
        for _ in 0..<Self.drainQueries {
            do {
                _ = try await store.apiKeys(merchantIdentifier: nil)
                outcomes.withLock { $0.answered += 1 }
            } catch {
                outcomes.withLock { $0.failures.append("\(error)") }
            }
            await Task.yield()
        }
    }

    /// Returns once it has answered a first query.
    func serving() async {
        for await _ in started {}
    }
}
