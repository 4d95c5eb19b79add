import Foundation
import OrchardTesting
import Testing

/// The real Apple-signed EC_v1 vector (spreedly/gala, MIT) decrypted through every form its
/// processing key can take, made at test time by the `openssl` CLI.
@Suite("orchard token decrypt reads keys in every form")
struct KeyFormatTests {
    static let vector = OrchardProcess.repositoryRoot.appendingPathComponent("Tests/ApplePayTests/Fixtures/gala-2021")

    static func forms(_ directory: TemporaryDirectory) async throws -> [KeyForm] {
        try await KeyForms.write(
            keyPEM: try String(contentsOf: vector.appendingPathComponent("private_key.pem"), encoding: .utf8),
            certificatePEM: try String(contentsOf: vector.appendingPathComponent("certificate.pem"), encoding: .utf8), isEC: true,
            into: directory.url.path)
    }

    func decrypt(_ form: KeyForm, password: [String]) async throws -> OrchardProcess.Result {
        var arguments = [
            "token", "decrypt", "--token", Self.vector.appendingPathComponent("token.json").path, "--key", form.path, "--at",
            "2021-09-01T19:04:00Z",
        ]
        if !form.bundlesCertificate { arguments += ["--cert", Self.vector.appendingPathComponent("certificate.pem").path] }
        return try await OrchardProcess.run(arguments + password)
    }

    @Test("every form decrypts the real vector; encrypted ones only with their password")
    func everyForm() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let forms = try await Self.forms(directory)
        #expect(forms.count == 9)
        let expected = try JSONSerialization.jsonObject(with: Data(contentsOf: Self.vector.appendingPathComponent("expected.json")))
        let plaintext = (expected as? [String: Any])?["plaintext"] as? NSDictionary
        for form in forms {
            let result = try await decrypt(form, password: form.encrypted ? ["--password-file", directory.path("password.txt")] : [])
            #expect(result.status == 0, "\(form): \(result.stderr)")
            #expect((try? JSONSerialization.jsonObject(with: Data(result.stdout))) as? NSDictionary == plaintext, "\(form)")
            guard form.encrypted else { continue }
            let none = try await decrypt(form, password: [])
            #expect(none.status == 1, "\(form)")
            #expect(
                none.stderr.contains(form.bundlesCertificate ? "needs a password" : "encrypted: give its password"),
                "\(form): \(none.stderr)")
            try directory.write("wrong.txt", Array("not-it".utf8))
            let wrong = try await decrypt(form, password: ["--password-file", directory.path("wrong.txt")])
            #expect(wrong.status == 1, "\(form)")
            #expect(wrong.stderr.contains("wrong password"), "\(form): \(wrong.stderr)")
        }
    }

    @Test("a certificate where the key goes is named as such")
    func certificateForKey() async throws {
        let certificate = Self.vector.appendingPathComponent("certificate.pem").path
        let result = try await OrchardProcess.run([
            "token", "decrypt", "--token", Self.vector.appendingPathComponent("token.json").path, "--key", certificate, "--cert",
            certificate,
        ])
        #expect(result.status == 1)
        #expect(result.stderr == "orchard: \(certificate): no private key here: a certificate, not a private key\n")
    }
}
