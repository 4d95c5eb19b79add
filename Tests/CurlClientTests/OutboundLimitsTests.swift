import Foundation
import OrchardTesting
import Testing

@testable import CurlClient

@Suite("libcurl client bounds and hygiene: calls in flight, configured trust only, configured proxy only")
struct OutboundLimitsTests {
    func request(_ fixture: GatewayFixture, caPEM: [UInt8]? = nil) throws -> CurlRequest {
        CurlRequest(
            method: "POST", url: fixture.baseURL + "/paymentservices/paymentSession",
            headers: [(name: "Content-Type", value: "application/json")], body: CurlClientTests.body,
            identity: .pem(
                certificate: Array(try fixture.material.identity.certificatePEM.utf8), key: Array(try fixture.material.identity.keyPEM.utf8)
            ),
            trust: .caPEM(caPEM ?? fixture.material.caPEM), timeouts: CurlTimeouts(connect: .seconds(3), total: .seconds(10)))
    }

    /// Waits until `server` has accepted `count` connections: that many calls are in flight.
    func waitForConnections(_ server: ConnectionRecorder, _ count: Int) async throws {
        _ = try await Eventually.until { server.connections >= count }
        try #require(server.connections == count)
    }

    /// A call to `server` that stays in flight until its task is cancelled (the server never answers).
    func held(_ server: ConnectionRecorder, group: String? = nil) -> CurlRequest {
        var request = CurlRequest(url: server.url + "/", timeouts: CurlTimeouts(connect: .seconds(5), total: .seconds(29)))
        request.concurrencyGroup = group
        return request
    }

    @Test("past maxConcurrentPerGroup, maxConcurrentPerHost or maxTransfers a call fails at once as busy and is never sent")
    func busy() async throws {
        let slow = ConnectionRecorder(holdOpen: true)
        let other = ConnectionRecorder(holdOpen: true)
        try await slow.start()
        try await other.start()
        defer {
            Task {
                await slow.stop()
                await other.stop()
            }
        }
        let client = try CurlHTTPClient(
            configuration: .init(allowedSchemes: ["http"], maxTransfers: 3, maxConcurrentPerHost: 2, maxConcurrentPerGroup: 1))
        defer { client.shutdown() }
        let first = Task { try await client.execute(held(slow, group: "merchant A")) }
        try await waitForConnections(slow, 1)
        let sameGroup = await #expect(throws: CurlError.self) { _ = try await client.execute(held(slow, group: "merchant A")) }
        #expect(sameGroup?.kind == .busy)
        #expect(sameGroup?.message == "1 requests for merchant A are already in flight; not sent")

        let second = Task { try await client.execute(held(slow, group: "merchant B")) }
        try await waitForConnections(slow, 2)
        let sameHost = await #expect(throws: CurlError.self) { _ = try await client.execute(held(slow, group: "merchant C")) }
        #expect(sameHost?.kind == .busy)
        #expect(sameHost?.message == "2 requests to \(slow.url) are already in flight; not sent")

        // Another origin has room until maxTransfers is reached.
        let third = Task { try await client.execute(held(other)) }
        try await waitForConnections(other, 1)
        let total = await #expect(throws: CurlError.self) { _ = try await client.execute(held(other)) }
        #expect(total?.kind == .busy)
        #expect(total?.message == "3 requests are already in flight; not sent")
        #expect(client.transfersInFlight == 3)
        #expect(slow.connections == 2 && other.connections == 1, "the refused calls never connected")

        for task in [first, second, third] { task.cancel() }
        for task in [first, second, third] {
            guard case .failure(let error) = await task.result else {
                Issue.record("a held call finished")
                continue
            }
            #expect((error as? CurlError)?.kind == .cancelled)
        }
        #expect(client.transfersInFlight == 0, "finished calls give their slots back")
        let again = Task { try await client.execute(held(slow, group: "merchant A")) }
        try await waitForConnections(slow, 3)
        again.cancel()
        _ = await again.result
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
