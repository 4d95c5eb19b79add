import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import OrchardComposition
import OrchardCore
import OrchardInMemory
import OrchardServerTesting
import OrchardTesting
import Testing

@testable import OrchardConfiguration
@testable import OrchardServer
@testable import OrchardServices

/// The admin API is one route group whose middleware checks the token: a route added to it
/// cannot be left open, and a route outside it is not under `/admin`.
@Suite("Admin API: one group, one token check")
struct AdminGroupTests {
    @Test("every /admin route answers 401 without the admin token or with a wrong one; the right one passes")
    func everyRouteChecked() async throws {
        try await OpenAPITests.withConfiguration { configuration in
            // Each route with its parameters filled in, as a request would name it.
            let routes = OpenAPITests.router(configuration: configuration).routes.map { route in
                (route.method, route.path.description.replacingOccurrences(of: #"\{[^}/]*\}"#, with: "x", options: .regularExpression))
            }
            .filter { $0.1.hasPrefix("/admin") }
            #expect(routes.count > 20, "the admin API's routes")
            let dependencies = ApplicationDependencies(configuration: configuration, sessions: StubSessions(), store: InMemoryStore())
            try await buildApplication(dependencies).test(.router) { client in
                for (method, path) in routes {
                    for authorization in [nil, "Bearer \(MoreMerchants.adminToken)x"] {
                        var headers: HTTPFields = [.contentType: "application/json"]
                        if let authorization { headers[.authorization] = authorization }
                        let response = try await client.execute(
                            uri: path, method: method, headers: headers, body: ByteBuffer(string: "{}"))
                        #expect(response.status == .unauthorized, "\(method) \(path), Authorization: \(authorization ?? "none")")
                    }
                }
                let health = try await client.execute(
                    uri: "/admin/health", method: .get, headers: [.authorization: "Bearer \(MoreMerchants.adminToken)"])
                #expect(health.status == .ok)
            }
        }
    }
}
