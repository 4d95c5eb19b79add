import Crypto
import Foundation
import OrchardCore
import Testing

@Suite("A domain's answer judged as Apple would, and Orchard's own wrong answer told from a changed one")
struct DomainFileVerdictTests {
    static let file = Array("association\n".utf8)
    static let other = Array("<html>app</html>".utf8)

    static let signer = DomainFileSigner.random()

    func answer(_ body: [UInt8], status: Int = 200, signature: String? = nil) -> ProbeAnswer {
        ProbeAnswer(status: status, contentType: "text/plain", location: nil, body: body, fileSignature: signature)
    }

    @Test("the file byte for byte passes; other bytes fail, with the first differing byte")
    func bytes() {
        #expect(DomainFileVerdict(answer(Self.file), domain: "shop.example", expected: Self.file).passed)
        let wrong = DomainFileVerdict(answer(Self.other), domain: "shop.example", expected: Self.file)
        #expect(!wrong.passed && wrong.detail.contains("differ from domainAssociationFile's 12 from byte 0"))
        #expect(!wrong.servedWronglyByOrchard)
    }

    func verdict(_ answer: ProbeAnswer, domain: String = "shop.example") -> DomainFileVerdict {
        DomainFileVerdict(answer, domain: domain, expected: Self.file, signer: Self.signer)
    }

    @Test(
        "wrong bytes under Orchard's signature of exactly them at this domain are Orchard's defect; a signature that does not match them is not"
    )
    func orchardsOwnAnswer() {
        let own = verdict(answer(Self.other, signature: Self.signer.signature(of: Self.other, domain: "shop.example")))
        #expect(!own.passed && own.servedWronglyByOrchard && own.detail.contains("Orchard itself served these bytes"))
        // The domain is case-insensitive, as a Host is.
        #expect(
            verdict(answer(Self.other, signature: Self.signer.signature(of: Self.other, domain: "Shop.Example"))).servedWronglyByOrchard)
        // A CDN changed the body but passed Orchard's header on: not Orchard's doing.
        let changed = verdict(answer(Self.other, signature: Self.signer.signature(of: Self.file, domain: "shop.example")))
        #expect(!changed.passed && !changed.servedWronglyByOrchard)
        // Without a signer (the command line's doctor) nothing is taken for Orchard's.
        let unsigned = DomainFileVerdict(
            answer(Self.other, signature: Self.signer.signature(of: Self.other, domain: "shop.example")), domain: "shop.example",
            expected: Self.file)
        #expect(!unsigned.servedWronglyByOrchard)
    }

    @Test("what anyone can compute is not Orchard's signature: a plain SHA-256, another key's, another domain's, a mangled one")
    func forgedSignatures() {
        let plain = "sha-256=:" + Data(SHA256.hash(data: Self.other)).base64EncodedString() + ":"
        let hmacPlain = "hmac-sha256=:" + Data(SHA256.hash(data: Self.other)).base64EncodedString() + ":"
        let otherKey = DomainFileSigner.random().signature(of: Self.other, domain: "shop.example")
        let otherDomain = Self.signer.signature(of: Self.other, domain: "tenant.example")
        let own = Self.signer.signature(of: Self.other, domain: "shop.example")
        let forgeries = [
            plain, hmacPlain, otherKey, otherDomain, String(own.dropLast()), own + "A", "", String(repeating: "A", count: 10_000),
        ]
        for forged in forgeries {
            let judged = verdict(answer(Self.other, signature: forged))
            #expect(!judged.passed && !judged.servedWronglyByOrchard, "\(forged.prefix(60))")
        }
        // The same bytes and domain under the same vault key sign alike: instances sharing a database recognise each other.
        let key = SymmetricKey(size: .bits256)
        #expect(
            PaymentVault(key: key).domainFileSigner.signs(
                PaymentVault(key: key).domainFileSigner.signature(of: Self.other, domain: "shop.example"), bytes: Self.other,
                domain: "shop.example"))
    }

    @Test("a domain's Location and Content-Type reach the advice at most 200 characters long")
    func boundedHeaders() {
        let long = "https://shop.example/" + String(repeating: "a", count: 5000)
        let answer = ProbeAnswer(status: 302, contentType: nil, location: long, body: [])
        let verdict = DomainFileVerdict(answer, domain: "shop.example", expected: Self.file)
        #expect(!verdict.passed && verdict.detail.count < 400 && verdict.detail.contains("…"))
    }
}
