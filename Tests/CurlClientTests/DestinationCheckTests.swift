import Foundation
import OrchardTesting
import Synchronization
import Testing

@testable import CurlClient

/// A client with a destination check judges each address a host resolved to as it connects
/// (names come from CURLOPT_RESOLVE here: tests have no DNS), never just the URL's text; through
/// a proxy it resolves and checks the host itself and hands the proxy the address it checked.
@Suite("libcurl client: connect-time destination check")
struct DestinationCheckTests {
    /// Refuses 127.0.0.0/8 unless `allowLoopback`, and 10.0.0.0/8 always; records every address it is asked about.
    final class Check: Sendable {
        let allowLoopback: Bool
        private let seen = Mutex<[[UInt8]]>([])

        init(allowLoopback: Bool) { self.allowLoopback = allowLoopback }

        var addresses: [[UInt8]] { seen.withLock { $0 } }

        var curl: CurlDestinationCheck {
            CurlDestinationCheck { [self] address in
                seen.withLock { $0.append(address) }
                let text = address.map(String.init).joined(separator: ".")
                if address.first == 10 { return "\(text), private" }
                if address.first == 127 && !allowLoopback { return "\(text), loopback" }
                return address.count == 4 ? nil : "\(text), not IPv4"
            }
        }
    }

    func client(_ check: Check, resolve: [String], proxy: String? = nil) throws -> CurlHTTPClient {
        try CurlHTTPClient(
            configuration: .init(allowedSchemes: ["http", "https"], proxy: proxy, destinationCheck: check.curl, resolve: resolve))
    }

    func post(_ url: String) -> CurlRequest {
        CurlRequest(method: "POST", url: url, body: Array("{}".utf8), timeouts: CurlTimeouts(connect: .seconds(3), total: .seconds(10)))
    }

    @Test("a name that resolves to a refused address, or that address written in the URL, gets a typed refusal and no connection")
    func refusedName() async throws {
        let listener = ConnectionRecorder()
        let port = try await listener.start()
        defer { Task { await listener.stop() } }
        let check = Check(allowLoopback: false)
        let http = try client(check, resolve: ["rebind.test:\(port):127.0.0.1"])
        defer { http.shutdown() }
        let refused = await #expect(throws: CurlError.self) { _ = try await http.execute(post("http://rebind.test:\(port)/hook")) }
        #expect(refused?.kind == .refusedDestination)
        #expect(refused?.message == "refused: rebind.test resolved to 127.0.0.1, loopback")
        let literal = await #expect(throws: CurlError.self) { _ = try await http.execute(post("http://127.0.0.1:\(port)/hook")) }
        #expect(literal?.kind == .refusedDestination)
        #expect(check.addresses == [[127, 0, 0, 1], [127, 0, 0, 1]])
        #expect(listener.connections == 0, "nothing was connected to")
    }

    @Test("an allowed address is connected to; of several, the refused ones are skipped")
    func allowedAddress() async throws {
        let receiver = MockWebhookReceiver(secret: String(repeating: "s", count: 32))
        let port = try await receiver.start()
        defer { Task { await receiver.stop() } }
        let check = Check(allowLoopback: true)
        let http = try client(check, resolve: ["shop.test:\(port):10.0.0.1,127.0.0.1"])
        defer { http.shutdown() }
        let answered = try await http.execute(post("http://shop.test:\(port)/orchard/webhooks"))
        #expect(answered.status == 200)
        #expect(receiver.deliveries.count == 1)
        #expect(check.addresses.contains([10, 0, 0, 1]) && check.addresses.contains([127, 0, 0, 1]))
    }

    @Test("a redirect is returned as it is, never followed")
    func noRedirects() async throws {
        let receiver = MockWebhookReceiver(secret: String(repeating: "s", count: 32))
        let port = try await receiver.start()
        defer { Task { await receiver.stop() } }
        let elsewhere = ConnectionRecorder()
        try await elsewhere.start()
        defer { Task { await elsewhere.stop() } }
        receiver.answer(307, location: elsewhere.url + "/metadata")
        let http = try client(Check(allowLoopback: true), resolve: ["shop.test:\(port):127.0.0.1"])
        defer { http.shutdown() }
        let answered = try await http.execute(post("http://shop.test:\(port)/orchard/webhooks"))
        #expect(answered.status == 307)
        #expect(answered.header("Location") == elsewhere.url + "/metadata")
        #expect(elsewhere.connections == 0)
    }

    @Test("through a proxy the host is resolved and checked here, and the proxy is asked for the checked address, never the name")
    func proxyPinned() async throws {
        let proxy = RecordingProxy()
        try await proxy.start()
        defer { Task { await proxy.stop() } }
        let check = Check(allowLoopback: true)
        let http = try client(check, resolve: ["shop.test:8443:127.0.0.1", "plain.test:8080:127.0.0.1"], proxy: proxy.url)
        defer { http.shutdown() }
        let viaProxy = await #expect(throws: CurlError.self) { _ = try await http.execute(post("https://shop.test:8443/hook")) }
        #expect(viaProxy?.kind != .refusedDestination, "the address was allowed; the recording proxy refused the tunnel")
        _ = try? await http.execute(post("http://plain.test:8080/hook"))
        #expect(proxy.requestLines == ["CONNECT 127.0.0.1:8443", "CONNECT 127.0.0.1:8080"], "\(proxy.requestLines)")
    }

    @Test("through a proxy a host that resolves to a refused address is refused before the proxy is contacted")
    func proxyRefused() async throws {
        let proxy = RecordingProxy()
        try await proxy.start()
        defer { Task { await proxy.stop() } }
        let http = try client(Check(allowLoopback: false), resolve: ["rebind.test:443:10.0.0.1,127.0.0.1"], proxy: proxy.url)
        defer { http.shutdown() }
        let refused = await #expect(throws: CurlError.self) { _ = try await http.execute(post("https://rebind.test/hook")) }
        #expect(refused?.kind == .refusedDestination)
        #expect(refused?.message == "refused: rebind.test resolved to 10.0.0.1, private; 127.0.0.1, loopback")
        #expect(proxy.connections == 0)
    }
}
