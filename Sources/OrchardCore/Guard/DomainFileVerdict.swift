import Foundation

/// Whether a domain's answer is its association file as Apple fetches it, and if not, why in
/// plain words: the doctor and the guard say the same.
public struct DomainFileVerdict: Sendable, Equatable {
    public var passed: Bool
    public var detail: String
    /// Orchard itself served the wrong bytes: the answer carries Orchard's signature of exactly
    /// those bytes at this domain (so nothing in between changed them, and no one else made it),
    /// yet they are not the configured file. A defect of Orchard's (or of its routing of the
    /// domain), not of the shop's.
    public var servedWronglyByOrchard: Bool

    /// Apple needs HTTP 200 with the file byte for byte; redirects are not followed. `signer`
    /// recognises Orchard's own answer (``DomainFileSigner``); without it none is.
    public init(_ answer: ProbeAnswer, domain: String, expected: [UInt8]?, signer: DomainFileSigner? = nil) {
        let url = Self.url(domain)
        passed = answer.status == 200 && expected != nil && answer.body == expected
        servedWronglyByOrchard =
            !passed && answer.status == 200 && signer?.signs(answer.fileSignature, bytes: answer.body, domain: domain) == true
        detail =
            passed
            ? "\(url) serves the association file byte for byte (\(answer.contentType.map { Self.bounded($0) } ?? "no content type"))"
            : Self.judge(answer, url: url, expected: expected)
                + (servedWronglyByOrchard ? " (Orchard itself served these bytes: a defect to report, not the shop's doing)" : "")
    }

    /// When the domain gave no HTTP answer at all.
    public init(unreachable error: GatewayError, domain: String) {
        passed = false
        servedWronglyByOrchard = false
        detail = "\(Self.url(domain)) cannot be fetched: \(error.message)"
    }

    public static func url(_ domain: String) -> String {
        "https://\(domain)/.well-known/apple-developer-merchantid-domain-association"
    }

    static func judge(_ answer: ProbeAnswer, url: String, expected: [UInt8]?) -> String {
        var answer = answer
        // The domain's headers are another party's words: bounded before they reach a record,
        // a log line or a webhook.
        answer.location = answer.location.map { Self.bounded($0) }
        answer.contentType = answer.contentType.map { Self.bounded($0) }
        switch answer.status {
        case 300..<400:
            return
                "\(url) redirects (HTTP \(answer.status)) to \(answer.location ?? "nowhere"): Apple does not follow redirects; serve the file there directly"
        case 404:
            return "\(url) is not found: serve the file at that path (Orchard does when the domain points at it)"
        case 200:
            guard let expected else { return "\(url) serves a file, but no domainAssociationFile is configured to compare it with" }
            let first =
                zip(answer.body, expected).enumerated().first { $0.element.0 != $0.element.1 }?.offset
                ?? min(answer.body.count, expected.count)
            return
                "\(url) serves \(answer.body.count) bytes (\(answer.contentType ?? "no content type")) that differ from domainAssociationFile's \(expected.count) from byte \(first): deploy the file unchanged"
        default:
            return "\(url) answers HTTP \(answer.status): Apple needs 200 with the file"
        }
    }

    /// At most 200 characters of a header value, marked when cut.
    static func bounded(_ text: String) -> String {
        text.count <= 200 ? text : String(text.prefix(200)) + "…"
    }
}
