import Foundation
import Hummingbird
import OrchardCore

/// `GET /.well-known/apple-developer-merchantid-domain-association`, chosen by Host.
struct DomainAssociationController {
    /// The routes the router adds.
    var routes: RouteCollection<OrchardRequestContext> {
        let router = RouteCollection(context: OrchardRequestContext.self)
        router.get("/.well-known/apple-developer-merchantid-domain-association") { _, context in
            guard let file = context.merchant?.domainAssociation else {
                throw OrchardError(.notFound, "no domain association file is configured for this host")
            }
            return Response(
                status: .ok,
                headers: [.contentType: "text/plain", .contentLength: String(file.count)],
                body: ResponseBody(byteBuffer: ByteBuffer(bytes: file)))
        }
        return router
    }
}
