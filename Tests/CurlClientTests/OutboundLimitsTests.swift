import Foundation
import OrchardTesting
import Testing

@testable import CurlClient

@Suite("libcurl client bounds and hygiene: calls in flight, configured trust only, configured proxy only")
struct OutboundLimitsTests {
    func request(_ fixture: GatewayFixture, caPEM: [UInt8]? = nil, group: String? = nil) throws -> CurlRequest {
        var request = CurlRequest(
            method: "POST", url: fixture.baseURL + "/paymentservices/paymentSession",
            headers: [(name: "Content-Type", value: "application/json")], body: CurlClientTests.body,
            identity: .pem(
                certificate: Array(try fixture.material.identity.certificatePEM.utf8), key: Array(try fixture.material.identity.keyPEM.utf8)
            ),
            trust: .caPEM(caPEM ?? fixture.material.caPEM), timeouts: CurlTimeouts(connect: .seconds(3), total: .seconds(10)))
        request.concurrencyGroup = group
        return request
    }

    /// Waits until the mock has received `count` requests (the earlier calls are in flight).
    func waitForRequests(_ fixture: GatewayFixture, _ count: Int) async throws {
        var waited = 0
        while fixture.gateway.stats.requests < count && waited < 500 {
            try await Task.sleep(for: .milliseconds(20))
            waited += 1
        }
        try #require(fixture.gateway.stats.requests == count)
    }

    @Test("past maxConcurrentPerGroup or maxConcurrentPerHost a call fails at once as busy and is never sent")
    func busy() async throws {
        let fixture = try await GatewayFixture.start(faults: MockGatewayFaults(latency: .seconds(2)))
        defer { Task { await fixture.gateway.stop() } }
        let client = try CurlHTTPClient(configuration: .init(maxTransfers: 3, maxConcurrentPerHost: 2, maxConcurrentPerGroup: 1))
        defer { client.shutdown() }
        async let first = client.execute(try request(fixture, group: "merchant A"))
        try await waitForRequests(fixture, 1)
        let sameGroup = await #expect(throws: CurlError.self) { _ = try await client.execute(try request(fixture, group: "merchant A")) }
        #expect(sameGroup?.kind == .busy)
        #expect(sameGroup?.message.contains("merchant A") == true)

        async let second = client.execute(try request(fixture, group: "merchant B"))
        try await waitForRequests(fixture, 2)
        let sameHost = await #expect(throws: CurlError.self) { _ = try await client.execute(try request(fixture, group: "merchant C")) }
        #expect(sameHost?.kind == .busy)
        #expect(sameHost?.message.contains("127.0.0.1:\(fixture.port)") == true)

        // Another origin still has room up to maxTransfers: a closed port fails, but it was tried.
        let elsewhere = await #expect(throws: CurlError.self) {
            _ = try await client.execute(
                CurlRequest(url: "https://127.0.0.1:9/", timeouts: CurlTimeouts(connect: .seconds(1), total: .seconds(1))))
        }
        #expect(elsewhere?.kind == .connectFailed)
        #expect(client.transfersInFlight == 2)
        #expect(fixture.gateway.stats.requests == 2, "the refused calls never reached the gateway")

        #expect(try await first.status == 200)
        #expect(try await second.status == 200)
        #expect(client.transfersInFlight == 0, "finished calls give their slots back")
        #expect(try await client.execute(try request(fixture, group: "merchant A")).status == 200)
    }

    @Test("past maxTransfers any call fails at once as busy, whatever its origin")
    func busyTotal() async throws {
        let fixture = try await GatewayFixture.start(faults: MockGatewayFaults(latency: .seconds(2)))
        defer { Task { await fixture.gateway.stop() } }
        let client = try CurlHTTPClient(configuration: .init(maxTransfers: 1))
        defer { client.shutdown() }
        async let first = client.execute(try request(fixture))
        try await waitForRequests(fixture, 1)
        let refused = await #expect(throws: CurlError.self) { _ = try await client.execute(CurlRequest(url: "https://127.0.0.1:9/")) }
        #expect(refused?.kind == .busy)
        #expect(refused?.message == "1 requests are already in flight; not sent")
        #expect(try await first.status == 200)
    }

    @Test("a configured CA replaces the system store: libcurl loads no CA file or folder of its own, and another CA's server is refused")
    func trustReplacesSystem() async throws {
        let fixture = try await GatewayFixture.start()
        defer { Task { await fixture.gateway.stop() } }
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let client = try CurlHTTPClient()
        defer { client.shutdown() }
        let trace = directory.path("trace.txt")
        #expect(try await client.execute(try request(fixture), tracingTo: trace).status == 200)
        let lines = try String(contentsOfFile: trace, encoding: .utf8).split(separator: "\n").map {
            $0.trimmingCharacters(in: .whitespaces)
        }
        // libcurl names each CA file and folder it loads ("CAfile: /etc/ssl/certs/ca-certificates.crt",
        // "CApath: /etc/ssl/certs" with the system defaults); with the blob alone it names none.
        #expect(lines.contains("* successfully imported CA certificate blob"), "\(lines)")
        let loaded = lines.filter { $0.contains("CAfile:") || $0.contains("CApath:") }
        #expect(loaded.isEmpty, "\(loaded)")

        // The same trace names a CA file when one is given, and still no system folder beside it.
        let caFile = directory.path("ca.pem")
        try Data(fixture.material.caPEM).write(to: URL(fileURLWithPath: caFile))
        var fromFile = try request(fixture)
        fromFile.trust = .caFile(caFile)
        fromFile.freshConnection = true
        let fileTrace = directory.path("file-trace.txt")
        #expect(try await client.execute(fromFile, tracingTo: fileTrace).status == 200)
        let fileLines = try String(contentsOfFile: fileTrace, encoding: .utf8).split(separator: "\n")
            .map { $0.trimmingCharacters(in: .whitespaces) }
        #expect(fileLines.filter { $0.contains("CAfile:") || $0.contains("CApath:") } == ["*  CAfile: \(caFile)", "*  CApath: none"])

        let other = try TestPKI.make(commonName: "Another CA")
        let fresh = try CurlHTTPClient()
        defer { fresh.shutdown() }
        let refused = await #expect(throws: CurlError.self) {
            _ = try await fresh.execute(try request(fixture, caPEM: Array(try other.ca.certificatePEM.utf8)))
        }
        #expect(refused?.kind == .tls)
    }

    @Test("a configured proxy is used for every call (and only a configured one: the environment is never read)")
    func configuredProxy() async throws {
        let recorder = ConnectionRecorder()
        try await recorder.start()
        defer { Task { await recorder.stop() } }
        let client = try CurlHTTPClient(configuration: .init(allowedSchemes: ["http"], proxy: recorder.url))
        defer { client.shutdown() }
        await #expect(throws: CurlError.self) {
            _ = try await client.execute(
                CurlRequest(url: "http://127.0.0.1:9/never", timeouts: CurlTimeouts(connect: .seconds(2), total: .seconds(2))))
        }
        #expect(recorder.connections == 1, "the call went to the proxy, not to port 9")
    }
}
