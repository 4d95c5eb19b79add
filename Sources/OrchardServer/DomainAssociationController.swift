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
    /// Each file's answer (its bytes, length and digest), built once, not on every request.
    let answers = AssociationAnswers()

    /// The routes the router adds.
    var routes: RouteCollection<OrchardRequestContext> {
        let router = RouteCollection(context: OrchardRequestContext.self)
        let (directory, answers) = (directory, answers)
        router.get("/.well-known/apple-developer-merchantid-domain-association") { request, _ in
            guard let merchant = directory.merchant(forHost: request.head.authority)?.merchant, let file = merchant.domainAssociation
            else {
                throw OrchardError(.notFound, "no domain association file is configured for this host")
            }
            let answer = answers.answer(serving: file, for: merchant.merchantIdentifier)
            return Response(status: .ok, headers: answer.headers, body: ResponseBody(byteBuffer: answer.body))
        }
        return router
    }
}

/// The association files' answers by merchant, checked against the file to serve (a registered
/// merchant shares the platform's file; a changed file gets a new answer). Bounded.
final class AssociationAnswers: Sendable {
    struct Answer: Sendable {
        var file: [UInt8]
        var body: ByteBuffer
        /// The digest lets the guard tell Orchard's own answer from one a CDN or proxy changed.
        var headers: HTTPFields
    }

    private let entries = Mutex<[String: Answer]>([:])
    static let maximumEntries = 4096

    func answer(serving file: [UInt8], for merchant: String) -> Answer {
        // `==` on arrays is a pointer comparison when both share storage, as a configured file does.
        if let entry = entries.withLock({ $0[merchant] }), entry.file == file { return entry }
        let answer = Answer(
            file: file, body: ByteBuffer(bytes: file),
            headers: [
                .contentType: "text/plain", .contentLength: String(file.count),
                HTTPField.Name("Repr-Digest")!: DomainFileVerdict.reprDigest(of: file),
            ])
        entries.withLock { entries in
            if entries.count >= Self.maximumEntries { entries.removeAll() }
            entries[merchant] = answer
        }
        return answer
    }
}
