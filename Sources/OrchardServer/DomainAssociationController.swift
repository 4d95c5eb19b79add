import Foundation
import HTTPTypes
import Hummingbird
import OrchardCore
import Synchronization

/// `GET /.well-known/apple-developer-merchantid-domain-association`, chosen by Host.
struct DomainAssociationController {
    /// Resolves the Host itself: the route is added outside the group that resolves the client's
    /// address and the merchant for every other route, since the file needs only the merchant.
    let directory: MerchantDirectory
    /// Each file's digest, worked out once, not on every request (a file is ~10 KB).
    let digests = DigestCache()

    /// The routes the router adds.
    var routes: RouteCollection<OrchardRequestContext> {
        let router = RouteCollection(context: OrchardRequestContext.self)
        let (directory, digests) = (directory, digests)
        router.get("/.well-known/apple-developer-merchantid-domain-association") { request, _ in
            guard let merchant = directory.merchant(forHost: request.head.authority)?.merchant, let file = merchant.domainAssociation
            else {
                throw OrchardError(.notFound, "no domain association file is configured for this host")
            }
            return Response(
                status: .ok,
                // The digest lets the guard tell Orchard's own answer from one a CDN or proxy changed.
                headers: [
                    .contentType: "text/plain", .contentLength: String(file.count),
                    HTTPField.Name("Repr-Digest")!: digests.digest(of: file, for: merchant.merchantIdentifier),
                ],
                body: ResponseBody(byteBuffer: ByteBuffer(bytes: file)))
        }
        return router
    }
}

/// The association files' `Repr-Digest` values by merchant, checked against the bytes served (a
/// registered merchant shares the platform's file; a changed file is hashed again). Bounded.
final class DigestCache: Sendable {
    private let entries = Mutex<[String: (file: [UInt8], digest: String)]>([:])

    func digest(of file: [UInt8], for merchant: String) -> String {
        if let entry = entries.withLock({ $0[merchant] }), entry.file == file { return entry.digest }
        let digest = DomainFileVerdict.reprDigest(of: file)
        entries.withLock { entries in
            if entries.count >= 4096 { entries.removeAll() }
            entries[merchant] = (file, digest)
        }
        return digest
    }
}
