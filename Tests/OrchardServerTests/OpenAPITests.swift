import ApplePay
import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Logging
import OrchardComposition
import OrchardConfigurationTesting
import OrchardCore
import OrchardInMemory
import OrchardServerTesting
import OrchardTesting
import Testing

@testable import OrchardConfiguration
@testable import OrchardServer
@testable import OrchardServices

/// The OpenAPI document (`Sources/OrchardServer/OpenAPI/openapi.json`) is kept true: it is a
/// well-formed 3.1 document, it names exactly the routes the router has, its error codes are
/// `OrchardError`'s, every route it gives a body refuses anything but JSON, and the binary
/// serves it byte for byte.
@Suite("OpenAPI: the document and the router agree")
struct OpenAPITests {
    static let file = OrchardProcess.repositoryRoot.appendingPathComponent("Sources/OrchardServer/OpenAPI/openapi.json")
    static let methods = ["get", "put", "post", "delete", "patch", "head", "options", "trace"]

    static func document() throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: file)) as? [String: Any])
    }

    /// `METHOD /path/{}/…` for every operation of the document.
    static func operations(_ document: [String: Any]) throws -> [(key: String, path: String, method: String, operation: [String: Any])] {
        let paths = try #require(document["paths"] as? [String: [String: Any]])
        return paths.flatMap { path, item in
            item.compactMap { method, value -> (String, String, String, [String: Any])? in
                guard methods.contains(method), let operation = value as? [String: Any] else { return nil }
                return ("\(method.uppercased()) \(normalised(path))", path, method, operation)
            }
        }
    }

    /// A path template with its parameter names dropped: `/v1/payments/{id}` → `/v1/payments/{}`.
    static func normalised(_ path: String) -> String {
        path.replacingOccurrences(of: #"\{[^}/]*\}"#, with: "{}", options: .regularExpression)
    }

    /// Follows a local reference (`#/components/schemas/Error`); nil when it leads nowhere.
    static func resolve(_ reference: String, in document: [String: Any]) -> Any? {
        guard reference.hasPrefix("#/") else { return nil }
        var node: Any? = document
        for token in reference.dropFirst(2).split(separator: "/", omittingEmptySubsequences: false) {
            let key = token.replacingOccurrences(of: "~1", with: "/").replacingOccurrences(of: "~0", with: "~")
            node = (node as? [String: Any])?[key]
        }
        return node
    }

    /// Every `$ref` anywhere in `node`.
    static func references(in node: Any) -> [String] {
        if let object = node as? [String: Any] {
            return ((object["$ref"] as? String).map { [$0] } ?? []) + object.values.flatMap(references(in:))
        }
        if let array = node as? [Any] { return array.flatMap(references(in:)) }
        return []
    }

    /// A configuration with the admin API on, and a router built from it as `buildApplication` builds it.
    static func router(
        configuration: ServerConfiguration, store: any OrchardStore = InMemoryStore(), simulator: (any SimulatedApplePay)? = nil
    )
        -> Router<OrchardRequestContext>
    {
        let dependencies = ApplicationDependencies(
            configuration: configuration, sessions: StubSessions(), store: store, simulator: simulator, logger: Logger(label: "test"))
        return buildRouter(dependencies)
    }

    /// The test merchant's configuration, made in memory, with the admin API on and no rate limits.
    static func withConfiguration(_ body: (ServerConfiguration) async throws -> Void) async throws {
        var configuration = try ServerConfiguration(
            merchants: [try TestMerchant.configuration(domains: [TestConfiguration.domain, "localhost"])],
            tokenRoot: TestConfiguration.tokenChain.root.certificate, adminToken: AdminToken(MoreMerchants.adminToken))
        configuration.limits = .unlimited
        // Wallet's web service is routed under each configured webServiceURL's path: the document's is /wallet-orders.
        configuration.merchants[0].walletOrders = try TestWalletOrders.settings()
        try await body(configuration)
    }

    @Test("the document parses as OpenAPI 3.1, every $ref resolves, every operation has an ID and responses")
    func structure() throws {
        let document = try Self.document()
        #expect(document["openapi"] as? String == "3.1.0")
        let info = try #require(document["info"] as? [String: Any])
        #expect(info["title"] is String && info["version"] is String)
        let references = Self.references(in: document)
        #expect(references.count > 100)
        for reference in Set(references) {
            #expect(Self.resolve(reference, in: document) != nil, "\(reference) leads nowhere")
        }
        let operations = try Self.operations(document)
        #expect(Set(operations.compactMap { $0.operation["operationId"] as? String }).count == operations.count, "operationIds are unique")
        for (key, path, _, operation) in operations {
            let responses = operation["responses"] as? [String: Any] ?? [:]
            #expect(!responses.isEmpty, "\(key) has no responses")
            #expect(responses.keys.allSatisfy { Int($0).map { (100...599).contains($0) } ?? false }, "\(key): \(responses.keys.sorted())")
            // Every {parameter} of the path is declared as a path parameter.
            let declared = Set(
                (operation["parameters"] as? [[String: Any]] ?? []).compactMap { parameter -> String? in
                    let resolved = (parameter["$ref"] as? String).flatMap { Self.resolve($0, in: document) as? [String: Any] } ?? parameter
                    return resolved["in"] as? String == "path" ? resolved["name"] as? String : nil
                })
            let inPath = Set(
                path.split(separator: "/").filter { $0.hasPrefix("{") && $0.hasSuffix("}") }.map { String($0.dropFirst().dropLast()) })
            #expect(declared == inPath, "\(key): path parameters \(inPath.sorted()), declared \(declared.sorted())")
            // Bodies are JSON only (see JSONContentTypeMiddleware).
            if let body = operation["requestBody"] as? [String: Any] {
                #expect((body["content"] as? [String: Any]).map { Array($0.keys) } == ["application/json"], "\(key)")
            }
        }
    }

    @Test("/v1/ operations name the API-key scheme, /admin/ the admin token, and no other route needs one")
    func security() throws {
        let document = try Self.document()
        let schemes = try #require((document["components"] as? [String: Any])?["securitySchemes"] as? [String: [String: Any]])
        #expect(schemes["apiKey"]?["scheme"] as? String == "bearer")
        #expect(schemes["adminToken"]?["scheme"] as? String == "bearer")
        for (key, path, _, operation) in try Self.operations(document) {
            let names = (operation["security"] as? [[String: Any]] ?? []).flatMap(\.keys)
            // Wallet's calls carry `Authorization: AppleOrder <token>`, a header parameter Apple defines, no scheme of Orchard's.
            let expected = path.hasPrefix("/v1/") ? ["apiKey"] : path.hasPrefix("/admin/") ? ["adminToken"] : []
            #expect(names == expected, "\(key)")
            if !expected.isEmpty { #expect((operation["responses"] as? [String: Any])?["401"] != nil, "\(key) documents its 401") }
        }
    }

    @Test("the router's routes and the document's operations are the same set (the demo's /demo/ routes aside)")
    func routesMatch() async throws {
        try await Self.withConfiguration { configuration in
            let routes = Set(
                Self.router(configuration: configuration).routes.map { "\($0.method.rawValue) \(Self.normalised($0.path.description))" })
            let documented = Set(try Self.operations(try Self.document()).map(\.key))
            #expect(routes.subtracting(documented).sorted() == [], "routes the document does not describe")
            #expect(documented.subtracting(routes).sorted() == [], "operations the router does not have")
            // The demo adds its simulated sheet under /demo/ and nothing else; `orchard serve` never has them.
            let demo = Set(
                Self.router(
                    configuration: configuration,
                    simulator: try SimulatedSheet(
                        chain: TestConfiguration.tokenChain, processingKey: TestConfiguration.processingKey.publicKey)
                ).routes.map {
                    "\($0.method.rawValue) \(Self.normalised($0.path.description))"
                })
            #expect(demo.subtracting(routes).allSatisfy { $0.split(separator: " ")[1].hasPrefix("/demo/") })
            #expect(demo.isSuperset(of: routes))
        }
    }

    @Test("the document's error codes are OrchardError's codes")
    func errorCodes() throws {
        let schemas = try #require((try Self.document()["components"] as? [String: Any])?["schemas"] as? [String: Any])
        let documented = try #require((schemas["ErrorCode"] as? [String: Any])?["enum"] as? [String])
        #expect(Set(documented) == Set(OrchardError.Code.allCases.map(\.rawValue)))
        #expect(documented.count == OrchardError.Code.allCases.count)
    }

    @Test("every operation the document gives a body answers 415 to text/plain in the error shape, and documents it")
    func everyBodyIsJSONOnly() async throws {
        try await Self.withConfiguration { configuration in
            let store = InMemoryStore()
            let (key, secret) = APIKeyRecord.generate(merchantIdentifier: TestMaterial.merchantIdentifier, at: Date())
            try await store.insertAPIKey(key)
            let app = Application(router: Self.router(configuration: configuration, store: store))
            try await app.test(.router) { client in
                for (name, path, method, operation) in try Self.operations(try Self.document()) where operation["requestBody"] != nil {
                    var headers: HTTPFields = [.contentType: "text/plain"]
                    if path.hasPrefix("/v1/") { headers[.authorization] = "Bearer \(secret)" }
                    if path.hasPrefix("/admin/") { headers[.authorization] = "Bearer \(MoreMerchants.adminToken)" }
                    let uri = path.replacingOccurrences(of: #"\{[^}/]*\}"#, with: "x", options: .regularExpression)
                    let response = try await client.execute(
                        uri: uri, method: HTTPRequest.Method(method.uppercased())!, headers: headers, body: ByteBuffer(string: "{}"))
                    #expect(response.status == .unsupportedMediaType, "\(name)")
                    #expect(ContentTypeTests.code(response) == "unsupported_media_type", "\(name)")
                    let documented = (operation["responses"] as? [String: Any])?["415"] != nil
                    #expect(documented, "\(name) documents its 415")
                }
            }
        }
    }

    @Test("the webhooks section describes every event type, and each type's sample has the properties its schema requires and no others")
    func webhooks() throws {
        let document = try Self.document()
        let webhooks = try #require(document["webhooks"] as? [String: Any])
        #expect(Set(webhooks.keys) == Set(WebhookEventType.allCases.map(\.rawValue)))
        for type in WebhookEventType.allCases {
            let post = try #require((webhooks[type.rawValue] as? [String: Any])?["post"] as? [String: Any], "\(type.rawValue)")
            let body = try #require(post["requestBody"] as? [String: Any])
            let content = try #require((body["content"] as? [String: Any])?["application/json"] as? [String: Any])
            let reference = try #require((content["schema"] as? [String: Any])?["$ref"] as? String)
            let schema = try #require(Self.resolve(reference, in: document) as? [String: Any], "\(reference)")
            let properties = try #require(schema["properties"] as? [String: Any])
            #expect((properties["type"] as? [String: Any])?["const"] as? String == type.rawValue)
            let data = try #require(properties["data"] as? [String: Any])
            let event = try WebhookEvent.sample(type, merchantIdentifier: TestMaterial.merchantIdentifier, at: Date())
            let json = try #require(try JSONSerialization.jsonObject(with: Data(event.payload)) as? [String: Any])
            #expect(Set(json.keys).isSubset(of: Set(properties.keys)), "\(type.rawValue): \(json.keys.sorted())")
            #expect(Set(schema["required"] as? [String] ?? []).isSubset(of: Set(json.keys)), "\(type.rawValue)")
            let sampleData = try #require(json["data"] as? [String: Any])
            let dataProperties = Set((data["properties"] as? [String: Any])?.keys.map { $0 } ?? [])
            #expect(Set(sampleData.keys).isSubset(of: dataProperties), "\(type.rawValue): \(sampleData.keys.sorted())")
            #expect(Set(data["required"] as? [String] ?? []).isSubset(of: Set(sampleData.keys)), "\(type.rawValue)")
        }
    }

    @Test("GET /openapi.json serves the document byte for byte on any Host, beside a configured public folder, with the security headers")
    func served() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        try FileManager.default.createDirectory(atPath: directory.path("site"), withIntermediateDirectories: true)
        try directory.write("site/index.html", Array("<p>mine</p>".utf8))
        // The router test client says Host: localhost, which this merchant does not serve.
        try await buildApplication(
            try .testing(domains: [TestConfiguration.domain]) { $0.publicDirectory = directory.path("site") }
        )
        .test(.router) { client in
            let response = try await client.execute(uri: "/openapi.json", method: .get)
            #expect(response.status == .ok)
            #expect(Array(response.body.readableBytesView) == Array(try Data(contentsOf: Self.file)))
            #expect(response.headers[.contentType] == "application/json; charset=utf-8")
            #expect(response.headers[.contentSecurityPolicy]?.contains("default-src 'none'") == true)
            #expect(response.headers[.xContentTypeOptions] == "nosniff")
        }
    }
}
