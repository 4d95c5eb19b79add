import ApplePay
import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Logging
import OrchardConfiguration
import OrchardConfigurationTesting
import OrchardCore
import OrchardInMemory
import OrchardServer
import OrchardServerTesting
import OrchardServices
import OrchardTesting
import Synchronization
import Testing

/// Controllers through the router alone (`app.test(.router)`): no sockets, no TLS, the in-memory
/// store. The router test client always says Host: localhost, so the merchant serves "localhost".
@Suite("Router: controllers without sockets")
struct RouterTests {
    static func withApp(
        servesLocalhost: Bool = true, _ body: @escaping @Sendable (any TestClientProtocol, InMemoryStore) async throws -> Void
    ) async throws {
        let store = InMemoryStore()
        let domains = [TestConfiguration.domain] + (servesLocalhost ? ["localhost"] : [])
        let app = buildApplication(try .testing(store: store, domains: domains))
        try await app.test(.router) { client in
            try await body(client, store)
        }
    }

    static func json(_ response: TestResponse) -> [String: Any]? {
        try? JSONSerialization.jsonObject(with: Data(response.body.readableBytesView)) as? [String: Any]
    }

    @Test("order, then authorize with a real token, recorded in the in-memory store")
    func orderAndAuthorize() async throws {
        try await Self.withApp { client, store in
            let created = try await client.execute(
                uri: "/api/orders", method: .post, headers: [.contentType: "application/json"],
                body: ByteBuffer(string: #"{"items": [{"productId": "apple", "quantity": 2}]}"#))
            #expect(created.status == .created)
            let order = try #require(Self.json(created))
            let id = try #require(order["orderId"] as? String)
            let request = try #require(order["paymentRequest"] as? [String: Any])
            let (body, _) = try AuthorizeBody.make(id, request, minter: TokenMinter(chain: TestConfiguration.tokenChain))
            let paid = try await client.execute(
                uri: "/api/apple-pay/authorize", method: .post, headers: [.contentType: "application/json"],
                body: ByteBuffer(bytes: body))
            #expect(paid.status == .ok)
            #expect(Self.json(paid)?["status"] as? String == "success")
            #expect(paid.headers[.xContentTypeOptions] == "nosniff")
            #expect(try await store.payments(orderId: id).map(\.state) == [.authorized])
            #expect(try await store.order(id: id)?.state == .paid)
        }
    }

    @Test("bad input: malformed JSON is a 400, an oversized body a 413, an unknown order a 404; nothing is stored")
    func badInput() async throws {
        try await Self.withApp { client, store in
            let json: HTTPFields = [.contentType: "application/json"]
            let malformed = try await client.execute(uri: "/api/orders", method: .post, headers: json, body: ByteBuffer(string: "{"))
            #expect(malformed.status == .badRequest)
            #expect((Self.json(malformed)?["error"] as? [String: Any])?["code"] as? String == "invalid_json")
            let huge = try await client.execute(
                uri: "/api/orders", method: .post, headers: json, body: ByteBuffer(string: String(repeating: " ", count: 17 * 1024)))
            #expect(huge.status == .contentTooLarge)
            let unknown = try await client.execute(
                uri: "/api/orders/nope/coupon", method: .post, headers: json, body: ByteBuffer(string: #"{"couponCode": "TEN"}"#))
            #expect(unknown.status == .notFound)
            #expect(try await store.payments(state: nil, limit: 10).isEmpty)
        }
    }

    @Test("a merchant session comes from the session service for the host's domain")
    func session() async throws {
        try await Self.withApp { client, _ in
            // No body at all: validationURL is optional, but the request is still JSON.
            let response = try await client.execute(
                uri: "/api/apple-pay/session", method: .post, headers: [.contentType: "application/json"])
            #expect(response.status == .ok)
            #expect(Self.json(response)?["domainName"] as? String == "localhost")
        }
    }

    @Test("a host no merchant serves gets 421 from every merchant route, in one place")
    func unknownHost() async throws {
        try await Self.withApp(servesLocalhost: false) { client, _ in
            for (uri, method) in [
                ("/api/apple-pay/session", HTTPRequest.Method.post), ("/api/orders", .post), ("/api/apple-pay/authorize", .post),
                ("/api/checkout", .get),
            ] {
                let response = try await client.execute(
                    uri: uri, method: method, headers: [.contentType: "application/json"], body: ByteBuffer(string: "{}"))
                #expect(response.status == .misdirectedRequest, "\(uri)")
            }
        }
    }

    @Test("the page's files and a 404 need no merchant: a host no merchant serves gets them (with the security headers), not a 421")
    func filesWithoutMerchant() async throws {
        try await Self.withApp(servesLocalhost: false) { client, _ in
            let page = try await client.execute(uri: "/", method: .get)
            #expect(page.status == .ok)
            #expect(page.headers[.contentSecurityPolicy]?.contains("default-src 'none'") == true)
            let missing = try await client.execute(uri: "/no/such/page", method: .get)
            #expect(missing.status == .notFound)
            #expect(missing.headers[.xContentTypeOptions] == "nosniff")
            // The association file is a merchant's (a route, behind the Host's lookup): this host has none.
            let association = try await client.execute(uri: "/.well-known/apple-developer-merchantid-domain-association", method: .get)
            #expect(association.status == .notFound)
        }
    }

    @Test("at the debug level every request is logged with its path; the middleware that does it is left out above that level")
    func requestsLoggedAtDebug() async throws {
        let handler = CapturingLogHandler()  // at .trace
        let dependencies = try ApplicationDependencies.testing(logger: Logger(label: "t") { _ in handler })
        try await buildApplication(dependencies).test(.router) { client in
            let response = try await client.execute(uri: "/no/such/page", method: .get)
            #expect(response.status == .notFound)
        }
        let lines = handler.records.withLock { $0.filter { $0.level == .debug && $0.message == "Request" } }
        #expect(lines.map { $0.metadata["hb.request.path"] } == ["/no/such/page"])
    }

    @Test("without server.publicDirectory the checkout page built into the binary is served, byte for byte, with the security headers")
    func builtInCheckoutPage() async throws {
        let folder = OrchardProcess.repositoryRoot.appendingPathComponent("Public")
        try await Self.withApp { client, _ in
            let files = [
                ("/", "index.html"), ("/checkout/main.js", "checkout/main.js"), ("/favicon.svg", "favicon.svg"),
                ("/apple-touch-icon.png", "apple-touch-icon.png"),
            ]
            for (uri, file) in files {
                let response = try await client.execute(uri: uri, method: .get)
                #expect(response.status == .ok, "\(uri)")
                #expect(
                    Array(response.body.readableBytesView) == [UInt8](try Data(contentsOf: folder.appendingPathComponent(file))), "\(uri)")
                #expect(response.headers[.contentSecurityPolicy]?.contains("default-src 'none'") == true)
            }
            #expect(try await client.execute(uri: "/checkout/main.js", method: .get).headers[.contentType] == "text/javascript")
            // Apple's code window (Apple Pay on other browsers) shows the page's apple-touch-icon.
            #expect(try await client.execute(uri: "/apple-touch-icon.png", method: .get).headers[.contentType] == "image/png")
            let page = String(buffer: try await client.execute(uri: "/", method: .get).body)
            #expect(page.contains(#"<link rel="apple-touch-icon" href="/apple-touch-icon.png">"#))
            #expect(try await client.execute(uri: "/checkout", method: .get).status == .movedPermanently)
            #expect(try await client.execute(uri: "/missing.js", method: .get).status == .notFound)
            #expect(try await client.execute(uri: "/checkout/../index.html", method: .get).status != .internalServerError)
            let partial = try await client.execute(uri: "/index.html", method: .get, headers: [.range: "bytes=0-14"])
            #expect(partial.status == .partialContent)
            #expect(String(buffer: partial.body) == "<!doctype html>")
        }
    }

    @Test("a configured public folder replaces the built-in page; one without index.html is refused at startup")
    func publicDirectoryOverride() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        var file = try TestConfiguration.file(gatewayPort: 9, directory: directory)
        try FileManager.default.createDirectory(atPath: directory.path("site"), withIntermediateDirectories: true)
        file.server?.publicDirectory = "site"
        #expect {
            try ServerConfiguration.resolve(file, relativeTo: directory.url.path, environment: [:])
        } throws: { error in
            (error as? ConfigurationError)?.message == "\(directory.path("site")): server.publicDirectory has no index.html; "
                + "point it at a copy of Orchard's Public folder, or remove it to serve the built-in checkout page"
        }
        try directory.write("site/index.html", Array("<p>mine</p>".utf8))
        let configuration = try ServerConfiguration.resolve(file, relativeTo: directory.url.path, environment: [:])
        #expect(configuration.publicDirectory == directory.path("site"))
    }
}
