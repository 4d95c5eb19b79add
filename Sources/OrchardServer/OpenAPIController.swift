import Foundation
import Hummingbird

/// `GET /openapi.json`: the OpenAPI 3.1 description of this server's HTTP API, on any Host and
/// whatever `server.publicDirectory` serves. The document is `OpenAPI/openapi.json` in this
/// target, compiled into the binary by the EmbedPublic plugin; `OpenAPITests` keep it equal to
/// the router's routes.
struct OpenAPIController {
    static let path = "/openapi.json"

    /// The document's bytes, as written in the repository.
    static let document: [UInt8] = EmbeddedOpenAPIFiles.base64["openapi.json"].flatMap { Data(base64Encoded: $0) }.map(Array.init) ?? []

    /// The routes the router adds.
    var routes: RouteCollection<OrchardRequestContext> {
        let router = RouteCollection(context: OrchardRequestContext.self)
        router.get(RouterPath(Self.path)) { _, _ in
            Response(
                status: .ok, headers: [.contentType: "application/json; charset=utf-8", .cacheControl: "no-cache"],
                body: ResponseBody(byteBuffer: ByteBuffer(bytes: Self.document)))
        }
        return router
    }
}
