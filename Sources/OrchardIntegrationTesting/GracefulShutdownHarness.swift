import Logging
import OrchardServerTesting
import ServiceLifecycle

/// Runs `service` while `body` runs, then shuts it down gracefully and waits for it.
///
/// The harness once cancelled the server instead. Cancelling a Hummingbird server traps in
/// swift-nio ("Deinited NIOAsyncWriter without calling finish()", apple/swift-nio#3481) when a
/// connection has been accepted but not yet handed to the server: it crashed the whole test
/// process when the suite ran on one core. A graceful shutdown hands every accepted connection
/// over and closes it.
public func withGracefulShutdown<T: Sendable>(
    _ service: some Service, logger: Logger, _ body: () async throws -> T
) async throws -> T {
    var configuration = ServiceGroupConfiguration(services: [.init(service: service)], logger: logger)
    // A service that ignores the shutdown is cancelled after this long rather than hanging the test.
    configuration.maximumGracefulShutdownDuration = .seconds(10)
    configuration.maximumCancellationDuration = .seconds(10)
    let group = ServiceGroup(configuration: configuration)
    return try await withThrowingTaskGroup(of: Void.self) { tasks in
        tasks.addTask { try await group.run() }
        let result: Result<T, any Error>
        do {
            result = .success(try await body())
        } catch {
            result = .failure(error)
        }
        await group.triggerGracefulShutdown()
        try await tasks.waitForAll()
        return try result.get()
    }
}
