import ApplePay
import Crypto
import CurlClient
import Foundation
import Logging
import OrchardConfiguration
import OrchardCore
import OrchardSQLite
import OrchardServer
import OrchardServerTesting
import OrchardServices
import OrchardTesting
import ProcessorClients
import Synchronization
import Testing

/// A real server whose merchant charges through mock Worldpay or Worldline over loopback HTTPS.
public struct ProcessorFixture: Sendable {
    public typealias Kind = MockProcessorSetup.Kind
    public static let worldpay = MockProcessorSetup.worldpay
    public static let worldline = MockProcessorSetup.worldline
    public static let environment = MockProcessorSetup.environment

    public let server: ServerHarness
    public let mock: MockProcessors
    public let minter = TokenMinter(chain: ServerHarness.tokenChain)
    /// The server's and the mock's "now": real time, moved forward by tests past a processor's lag.
    public let clock: ShiftedClock

    public static func processor(_ kind: Kind, baseURL: String, password: String = "env:WP_PASSWORD", timeout: Int? = nil)
        -> ProcessorSection
    {
        MockProcessorSetup.section(kind, baseURL: baseURL, password: password, timeout: timeout)
    }

    public static func with(
        _ kind: Kind, password: String = "env:WP_PASSWORD", timeout: Int? = nil, admin: Bool = false, logHandler: (any LogHandler)? = nil,
        repositories: (Repositories) -> Repositories = { $0 }, reconcileEverySecond: Bool = false,
        transport: HarnessTransport = .router,
        configure: (inout ConfigurationFile, TemporaryDirectory) async throws -> Void = { _, _ in },
        _ body: (ProcessorFixture) async throws -> Void
    ) async throws {
        let mock = try MockProcessors(serverIdentity: TestMaterial.shared.server, worldpay: worldpay, worldline: worldline)
        let clock = ShiftedClock()
        mock.clock = clock.source
        try await mock.start()
        defer { Task { await mock.stop() } }
        let environment = environment.merging(admin ? MoreMerchants.environment : [:]) { $1 }
        try await ServerHarness.with(
            environment: environment, time: clock.source, logHandler: logHandler, repositories: repositories,
            transport: transport,
            configure: { file, directory in
                file.merchants[0].processor = processor(kind, baseURL: mock.baseURL, password: password, timeout: timeout)
                try await configure(&file, directory)
                if admin { MoreMerchants.addAdmin(&file) }
                if reconcileEverySecond {
                    file.payments?.reconcileIntervalSeconds = 1
                    file.payments?.reconcileFirstDelaySeconds = 1
                } else {
                    // The reconciler runs only where the test asks for it: its default pass every
                    // 30 s of real time, on the test's clock, would race the retries and clock steps
                    // the test drives itself once a loaded machine makes the test that slow.
                    file.payments?.reconcileIntervalSeconds = 3600
                }
            }
        ) { server in
            try await body(ProcessorFixture(server: server, mock: mock, clock: clock))
        }
    }

    public func order() async throws -> (id: String, request: [String: Any]) {
        let response = try await server.send(
            "POST", "/api/orders", body: Array(#"{"items": [{"productId": "apple", "quantity": 2}]}"#.utf8))
        #expect(response.status == 201)
        let json = try #require(response.json)
        return (try #require(json["orderId"] as? String), try #require(json["paymentRequest"] as? [String: Any]))
    }

    /// A fresh token for the order's 9.90 EUR, as a shopper's device signs it (new transaction ID each time).
    public func pay(_ id: String, _ request: [String: Any]) async throws -> (response: CurlResponse, token: PaymentData) {
        let (body, token) = try AuthorizeBody.make(id, request, minter: minter, at: clock.now)
        return (try await server.send("POST", "/api/apple-pay/authorize", body: body), token)
    }
}
