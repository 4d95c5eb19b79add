import Foundation
import OrchardCore
import Testing

@Suite("A domain's answer judged as Apple would, and Orchard's own wrong answer told from a changed one")
struct DomainFileVerdictTests {
    static let file = Array("association\n".utf8)
    static let other = Array("<html>app</html>".utf8)

    func answer(_ body: [UInt8], status: Int = 200, digest: String? = nil) -> ProbeAnswer {
        ProbeAnswer(status: status, contentType: "text/plain", location: nil, body: body, reprDigest: digest)
    }

    @Test("the file byte for byte passes; other bytes fail, with the first differing byte")
    func bytes() {
        #expect(DomainFileVerdict(answer(Self.file), domain: "shop.example", expected: Self.file).passed)
        let wrong = DomainFileVerdict(answer(Self.other), domain: "shop.example", expected: Self.file)
        #expect(!wrong.passed && wrong.detail.contains("differ from domainAssociationFile's 12 from byte 0"))
        #expect(!wrong.servedWronglyByOrchard)
    }

    @Test("wrong bytes under Orchard's digest of exactly them are Orchard's defect; a digest that does not match them is not")
    func orchardsOwnAnswer() {
        let own = DomainFileVerdict(
            answer(Self.other, digest: DomainFileVerdict.reprDigest(of: Self.other)), domain: "shop.example", expected: Self.file)
        #expect(!own.passed && own.servedWronglyByOrchard && own.detail.contains("Orchard itself served these bytes"))
        // A CDN changed the body but passed Orchard's header on: not Orchard's doing.
        let changed = DomainFileVerdict(
            answer(Self.other, digest: DomainFileVerdict.reprDigest(of: Self.file)), domain: "shop.example", expected: Self.file)
        #expect(!changed.passed && !changed.servedWronglyByOrchard)
        #expect(DomainFileVerdict.reprDigest(of: []) == "sha-256=:47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=:")
    }

    @Test("a domain's Location and Content-Type reach the advice at most 200 characters long")
    func boundedHeaders() {
        let long = "https://shop.example/" + String(repeating: "a", count: 5000)
        let answer = ProbeAnswer(status: 302, contentType: nil, location: long, body: [])
        let verdict = DomainFileVerdict(answer, domain: "shop.example", expected: Self.file)
        #expect(!verdict.passed && verdict.detail.count < 400 && verdict.detail.contains("…"))
    }
}
