import Foundation
import Hummingbird
import OrchardCore

/// `GET /.well-known/apple-developer-merchantid-domain-association`, chosen by Host.
struct DomainAssociationController {
    /// Resolves the Host itself: the route is added outside the group that resolves the client's
    /// address and the merchant for every other route, since the file needs only the merchant.
    let directory: MerchantDirectory

    /// The routes the router adds.
    var routes: RouteCollection<OrchardRequestContext> {
        let router = RouteCollection(context: OrchardRequestContext.self)
        let directory = directory
        router.get("/.well-known/apple-developer-merchantid-domain-association") { request, _ in
            guard let file = directory.merchant(forHost: request.head.authority)?.merchant.domainAssociation else {
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
