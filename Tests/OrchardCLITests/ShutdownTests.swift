import CurlClient
import Foundation
import OrchardConfiguration
import OrchardIntegrationTesting
import OrchardServer
import OrchardServerTesting
import OrchardServices
import OrchardTesting
import Synchronization
import Testing

/// Log lines of a `--log-format json` process, each parsed as one JSON object.
func jsonLogLines(_ output: String) -> [[String: Any]] {
    output.split(separator: "\n").compactMap { line in
        (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any]
    }
}

@Suite("Graceful shutdown of a real `orchard serve`: drain, refuse, exit 0")
struct ShutdownTests {
    /// A server whose sessions come from a mock gateway that holds its answers until released.
    static func server(drainTimeoutSeconds: Int) async throws -> (ServerProcess, GatewayFixture) {
        let fixture = try await GatewayFixture.start(domains: [ServerHarness.domain])
        fixture.gateway.holdSessions()
        let server = try ServerProcess(processorURL: nil, arguments: ["--log-format", "json"], gatewayPort: fixture.port) { file in
            file.appleGateway?.timeoutMilliseconds = 20_000
            file.server?.drainTimeoutSeconds = drainTimeoutSeconds
        }
        try await server.start()
        return (server, fixture)
    }

    /// Starts a merchant-session request and returns once the gateway holds it (so it is in flight).
    /// On a connection of its own: libcurl would send it again on a new one if a reused connection closed.
    static func sessionInFlight(_ server: ServerProcess, _ fixture: GatewayFixture) async throws -> Task<CurlResponse, any Error> {
        var session = CurlRequest(
            method: "POST", url: "http://127.0.0.1:\(server.port)/api/apple-pay/session",
            headers: [(name: "Host", value: ServerHarness.domain), (name: "Content-Type", value: "application/json")],
            body: MetricsTests.sessionBody)
        session.freshConnection = true
        session.timeouts = CurlTimeouts(connect: .seconds(2), total: .seconds(28))
        let request = Task { [session] in try await server.client.execute(session) }
        guard try await Eventually.until(every: .milliseconds(10), { !fixture.gateway.receivedSessionRequests.isEmpty }) else {
            throw CancellationError()
        }
        return request
    }

    /// Tries a new connection until one is refused; false if none was by the deadline.
    static func newConnectionRefused(_ server: ServerProcess) async -> Bool {
        (try? await Eventually.until {
            var probe = CurlRequest(url: "http://127.0.0.1:\(server.port)/health", headers: [(name: "Host", value: ServerHarness.domain)])
            probe.freshConnection = true
            probe.timeouts = CurlTimeouts(connect: .milliseconds(500), total: .seconds(1))
            do {
                _ = try await server.client.execute(probe)
                return false
            } catch {
                return (error as? CurlError)?.kind == .connectFailed
            }
        }) ?? false
    }

    @Test(
        "a signal lets the session in flight finish with Apple's bytes, refuses new connections meanwhile, and exits 0",
        arguments: [SIGTERM, SIGINT])
    func drainsInFlight(signal: Int32) async throws {
        // Apple's answer is held until the refusal has been seen: the session is in flight throughout.
        let (server, fixture) = try await Self.server(drainTimeoutSeconds: 25)
        let request = try await Self.sessionInFlight(server, fixture)
        let answered = Flag()
        let watcher = Task {
            _ = try? await request.value
            answered.set()
        }
        server.signal(signal)

        #expect(await Self.newConnectionRefused(server), "a connection opened after the signal was accepted")
        #expect(!answered.isSet, "the refusal came while the session was still in flight")
        fixture.gateway.releaseSessions()
        let response = try await request.value
        _ = await watcher.value
        #expect(response.status == 200)
        #expect(response.body == fixture.gateway.issuedSessions.last, "Apple's session, byte for byte")
        let status = await server.exitStatus()
        #expect(status == 0, "\(server.output.suffix(2000))")

        let lines = jsonLogLines(server.output)
        let draining = lines.first { ($0["message"] as? String)?.hasPrefix("shutting down") == true }
        // The session at least (a probe sent before the signal was handled may be in flight too).
        let inFlight = Int((draining?["metadata"] as? [String: Any])?["inFlight"] as? String ?? "") ?? 0
        #expect(inFlight >= 1, "\(lines.suffix(5))")
        #expect(lines.last?["message"] as? String == "Orchard stopped")
        await fixture.gateway.stop()
    }

    @Test("a request slower than the drain timeout is cut, and the process still exits 0")
    func cutsAfterDrainTimeout() async throws {
        // Apple's answer is never released: only the drain timeout ends the request.
        let (server, fixture) = try await Self.server(drainTimeoutSeconds: 1)
        let request = try await Self.sessionInFlight(server, fixture)
        server.signal(SIGTERM)
        let status = await server.exitStatus()
        #expect(status == 0, "\(server.output.suffix(2000))")
        // The client gets no answer: its connection closes (curl: "Empty reply from server").
        switch await request.result {
        case .success(let response):
            Issue.record("a cut request was answered \(response.status)")
        case .failure(let error):
            #expect((error as? CurlError)?.kind == .connectionLost, "\(error)")
        }
        let lines = jsonLogLines(server.output)
        #expect(lines.contains { ($0["message"] as? String)?.hasPrefix("the drain timeout passed") == true }, "\(lines.suffix(5))")
        await fixture.gateway.stop()
    }
}

/// A flag one task sets and another reads.
final class Flag: Sendable {
    private let value = Atomic<Bool>(false)
    func set() { value.store(true, ordering: .relaxed) }
    var isSet: Bool { value.load(ordering: .relaxed) }
}
