import ApplePay
import CurlClient
import Foundation
import Logging
import OrchardConfiguration
import OrchardConfigurationTesting
import OrchardCore
import OrchardInMemory
import OrchardServer
import OrchardServices
import OrchardTesting

/// The application's router on in-memory dependencies (``ApplicationDependencies/testing``),
/// answering in process: the routes, middleware, error mapping and Core services as `orchard serve`
/// wires them, without a file, a database, a socket or a background loop.
public struct RouterHarness: ServerRequests {
    public static let domain = TestConfiguration.domain
    public static let tokenChain = TestConfiguration.tokenChain
    public static let processingKey = TestConfiguration.processingKey

    public let router: RouterTransport
    public let store: InMemoryStore
    public var apiKeys: any APIKeys { store }

    /// Runs `body` against the router built from the test merchant's configuration (with
    /// ``MoreMerchants``' second merchant beside it when `secondMerchant`), changed by `configure`.
    public static func with(
        store: InMemoryStore = InMemoryStore(), time: TimeSource = .system, secondMerchant: Bool = false,
        configure: (inout ServerConfiguration) throws -> Void = { _ in }, _ body: (RouterHarness) async throws -> Void
    ) async throws {
        let logger = Logger(label: "orchard.test")
        // Ready as a server is once it listens: /health answers 200.
        let activity = ServerActivity()
        activity.markReady()
        let dependencies = try ApplicationDependencies.testing(store: store, time: time, activity: activity, logger: logger) {
            configuration in
            // Tests send many calls from one address; a test about limits sets its own.
            configuration.limits = .unlimited
            if secondMerchant { configuration.merchants.append(try TestMerchant.second(at: time.now)) }
            try configure(&configuration)
        }
        try await body(RouterHarness(router: RouterTransport(buildRouter(dependencies), logger: logger), store: store))
    }

    public func respond(_ method: String, _ path: String, host: String, headers: [(name: String, value: String)], body: [UInt8]?)
        async throws -> CurlResponse
    {
        try await router.send(method, path, host: host, headers: headers, body: body)
    }
}
