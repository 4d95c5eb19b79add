import ApplePay
import Foundation
import Logging
import OrchardCore
import OrchardInMemory
import OrchardTesting
import Synchronization
import Testing

/// What the loops' direct tests share: quiet loggers, merchants, outbox events written straight
/// to the in-memory store, and a shop that answers in memory. No sockets, no files.
enum LoopFixtures {
    static let quiet = Logger(label: "test.loops") { _ in SwiftLogNoOpLogHandler() }
    static let secret = Secret(String(repeating: "s", count: 40))

    /// A configured merchant whose webhooks go to `https://<identifier>/hooks`, or nowhere.
    static func merchant(_ identifier: String, webhook: Bool = true, domains: [String] = [], association: [UInt8]? = nil) throws
        -> MerchantConfiguration
    {
        let identity = TestMaterial.shared.identity
        return MerchantConfiguration(
            merchantIdentifier: identifier, displayName: identifier, domains: domains,
            identity: try MerchantIdentity(
                certificatePEM: Array(try identity.certificatePEM.utf8), keyPEM: Array(try identity.keyPEM.utf8),
                certificateName: "identity.pem", keyName: "identity.key", at: TestRecords.now),
            identitySource: "identity.pem", domainAssociation: association,
            webhook: webhook ? WebhookEndpoint(url: "https://\(identifier)/hooks", secret: secret) : nil)
    }

    /// Runs a loop's `run` in a task while `body` runs, then cancels it and waits for it to end,
    /// whether `body` returned or threw: no loop outlives the test that started it.
    static func running<T>(_ run: @escaping @Sendable () async throws -> Void, _ body: () async throws -> T) async throws -> T {
        let task = Task { try await run() }
        let result: Result<T, any Error>
        do {
            result = .success(try await body())
        } catch {
            result = .failure(error)
        }
        task.cancel()
        _ = await task.result
        return try result.get()
    }
}

/// A shop's webhook endpoints in memory: records every delivery, and answers each merchant as
/// the test says (a status, a failure, or no answer until the call is cancelled).
final class RecordingShop: ShopTransport {
    enum Answer: Sendable {
        case status(Int)
        case failure
        case hang
    }

    struct Delivery: Sendable {
        var merchant: String
        var url: String
        var headers: [String: String]
        var body: [UInt8]
    }

    struct Unreachable: Error, CustomStringConvertible {
        var description: String { "connection refused" }
    }

    private let state = Mutex<(deliveries: [Delivery], answers: [String: Answer])>(([], [:]))

    func answer(_ answer: Answer, for merchant: String) {
        state.withLock { $0.answers[merchant] = answer }
    }

    var deliveries: [Delivery] { state.withLock { $0.deliveries } }

    func deliveries(to merchant: String) -> [Delivery] { deliveries.filter { $0.merchant == merchant } }

    func post(to endpoint: WebhookEndpoint, headers: [(name: String, value: String)], body: [UInt8], timeout: Duration, merchant: String)
        async throws -> (status: Int, body: [UInt8])
    {
        let answer = state.withLock { state in
            state.deliveries.append(
                Delivery(
                    merchant: merchant, url: endpoint.url, headers: Dictionary(headers.map { ($0.name, $0.value) }) { $1 }, body: body))
            return state.answers[merchant] ?? .status(200)
        }
        switch answer {
        case .status(let status): return (status, [])
        case .failure: throw Unreachable()
        case .hang:
            try await Task.sleep(for: .seconds(86_400))
            throw CancellationError()
        }
    }
}
