import Foundation
import HTTPTypes
import Hummingbird
import OrchardCore
import OrchardServices
import Synchronization

/// `GET /.well-known/apple-developer-merchantid-domain-association`, chosen by Host.
struct DomainAssociationController {
    /// Resolves the Host itself: the route is added outside the group that resolves the client's
    /// address and the merchant for every other route, since the file needs only the merchant.
    let directory: MerchantDirectory
    /// Each domain's answer (its bytes, length and signature), built once, not on every request.
    let answers: AssociationAnswers

    init(directory: MerchantDirectory, signer: DomainFileSigner) {
        self.directory = directory
        answers = AssociationAnswers(signer: signer)
    }

    /// The routes the router adds.
    var routes: RouteCollection<OrchardRequestContext> {
        let router = RouteCollection(context: OrchardRequestContext.self)
        let (directory, answers) = (directory, answers)
        router.get("/.well-known/apple-developer-merchantid-domain-association") { request, _ in
            guard let (merchant, domain) = directory.merchant(forHost: request.head.authority), let file = merchant.domainAssociation
            else {
                throw OrchardError(.notFound, "no domain association file is configured for this host")
            }
            let answer = answers.answer(serving: file, at: domain)
            return Response(status: .ok, headers: answer.headers, body: ResponseBody(byteBuffer: answer.body))
        }
        return router
    }
}

/// The association files' answers by domain (the signature names it), checked against the file
/// to serve (a registered merchant shares the platform's file; a changed file gets a new answer).
/// Bounded.
final class AssociationAnswers: Sendable {
    struct Answer: Sendable {
        var file: [UInt8]
        var body: ByteBuffer
        /// The signature lets the guard tell Orchard's own answer from one a CDN or proxy changed,
        /// and from a domain's that merely claims to be Orchard's.
        var headers: HTTPFields
    }

    let signer: DomainFileSigner
    private let entries = Mutex<[String: Answer]>([:])
    static let maximumEntries = 4096
    static let signatureField = HTTPField.Name(DomainFileSigner.headerName)!

    init(signer: DomainFileSigner) {
        self.signer = signer
    }

    func answer(serving file: [UInt8], at domain: String) -> Answer {
        // `==` on arrays is a pointer comparison when both share storage, as a configured file does.
        if let entry = entries.withLock({ $0[domain] }), entry.file == file { return entry }
        let answer = Answer(
            file: file, body: ByteBuffer(bytes: file),
            headers: [
                .contentType: "text/plain", .contentLength: String(file.count),
                Self.signatureField: signer.signature(of: file, domain: domain),
            ])
        entries.withLock { entries in
            if entries.count >= Self.maximumEntries { entries.removeAll() }
            entries[domain] = answer
        }
        return answer
    }
}
