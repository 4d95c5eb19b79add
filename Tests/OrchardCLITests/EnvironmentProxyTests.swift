import CurlClient
import Foundation
import OrchardIntegrationTesting
import OrchardServerTesting
import OrchardTesting
import Testing

/// libcurl reads `http_proxy`, `HTTPS_PROXY`, `ALL_PROXY` and `SSLKEYLOGFILE` by itself; Orchard
/// must not. The variables are set only in a child process, never in this one (other tests run
/// beside it).
@Suite("Outbound calls ignore proxy and key-log variables in the environment")
struct EnvironmentProxyTests {
    /// The test process's environment with every proxy variable pointing at `recorder`.
    static func proxied(_ recorder: ConnectionRecorder) -> [String: String] {
        var environment = ProcessInfo.processInfo.environment
        for name in ["http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"] {
            environment[name] = recorder.url
        }
        environment["no_proxy"] = nil
        environment["NO_PROXY"] = nil
        return environment
    }

    @Test("orchard domains show sends the admin token straight to a loopback server, never through an environment proxy")
    func adminClient() async throws {
        let recorder = ConnectionRecorder()
        try await recorder.start()
        defer { Task { await recorder.stop() } }
        try await MoreMerchants.with(transport: .live) { server in
            var environment = Self.proxied(recorder)
            environment["ORCHARD_ADMIN_TOKEN"] = MoreMerchants.adminToken
            let shown = try await OrchardProcess.run(
                ["domains", "show", "--server", "http://127.0.0.1:\(server.port)"], environment: environment)
            #expect(shown.status == 0, "\(shown.stderr)")
            #expect(String(decoding: shown.stdout, as: UTF8.self).contains(MoreMerchants.secondDomain))
            #expect(recorder.connections == 0, "nothing, and no token, went to the proxy")
        }
    }

    @Test("SSLKEYLOGFILE set: a session over mutual TLS to the gateway succeeds and no TLS secret is written anywhere")
    func noKeyLog() async throws {
        let fixture = try await GatewayFixture.start(domains: [ServerHarness.domain])
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        let keyLog = folder.path("tls-keys.log")
        let server = try ServerProcess(processorURL: nil, environment: ["SSLKEYLOGFILE": keyLog], gatewayPort: fixture.port)
        try await server.start()
        var session = CurlRequest(
            method: "POST", url: "http://127.0.0.1:\(server.port)/api/apple-pay/session",
            headers: [(name: "Host", value: ServerHarness.domain), (name: "Content-Type", value: "application/json")],
            body: MetricsTests.sessionBody)
        session.timeouts = CurlTimeouts(connect: .seconds(2), total: .seconds(20))
        let response = try await server.client.execute(session)
        await server.stop()
        await fixture.gateway.stop()
        #expect(response.status == 200, "the session came over mutual TLS")
        #expect(fixture.gateway.receivedSessionRequests.count == 1)
        #expect(!FileManager.default.fileExists(atPath: keyLog), "libcurl wrote the TLS secrets of the call to Apple")
        #expect(server.log.contains("SSLKEYLOGFILE"), "the operator is told the variable is ignored")
    }
}
