import Foundation
import OrchardTesting
import Testing

@Suite("orchard serve and orchard-sandbox demo as processes")
struct ServeCommandTests {
    /// The demo's configuration (test PKI, a mock gateway port that is never called), changed by `mutate`.
    func configuration(_ directory: TemporaryDirectory, mutate: (inout [String: Any]) -> Void) throws -> String {
        let environment = try DemoEnvironment.prepare(directory: directory.url.path)
        let path = try environment.writeServerConfiguration(gatewayPort: 9, serverPort: 0, publicDirectory: nil)
        var json = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: path))) as? [String: Any])
        mutate(&json)
        try JSONSerialization.data(withJSONObject: json).write(to: URL(fileURLWithPath: path))
        return path
    }

    func merchant(_ json: inout [String: Any], _ change: (inout [String: Any]) -> Void) {
        var merchants = json["merchants"] as? [[String: Any]] ?? []
        change(&merchants[0])
        json["merchants"] = merchants
    }

    func serve(_ path: String) async throws -> OrchardProcess.Result {
        try await OrchardProcess.run(["serve", "--config", path])
    }

    @Test("orchard serve exits non-zero with one clear line for a missing, mismatched or expired identity")
    func processExits() async throws {
        #expect(FileManager.default.isExecutableFile(atPath: OrchardProcess.orchard.path), "orchard executable not found")
        let directory = try TemporaryDirectory()
        defer { directory.remove() }

        let missing = try await serve(try configuration(directory) { merchant(&$0) { $0["identityKey"] = "missing.key" } })
        #expect(missing.status == 1)
        #expect(missing.stderr == "orchard: \(directory.path("missing.key")): cannot read identityKey (no such file)\n")

        let other = try TestMaterial.shared.pki.issueMerchantIdentity(merchantIdentifier: TestMaterial.merchantIdentifier)
        try other.write(certificateTo: directory.path("other.pem"), keyTo: directory.path("other.key"))
        let mismatched = try await serve(try configuration(directory) { merchant(&$0) { $0["identityCertificate"] = "other.pem" } })
        #expect(mismatched.status == 1)
        #expect(mismatched.stderr.hasSuffix("does not match the certificate \(directory.path("other.pem"))\n"))
        #expect(mismatched.stderr.split(separator: "\n").count == 1)

        let expired = try TestMaterial.shared.pki.issueMerchantIdentity(
            merchantIdentifier: TestMaterial.merchantIdentifier, notValidBefore: Date(timeIntervalSinceNow: -800 * 86_400),
            notValidAfter: Date(timeIntervalSinceNow: -3600))
        try expired.write(certificateTo: directory.path("expired.pem"), keyTo: directory.path("expired.key"))
        let result = try await serve(
            try configuration(directory) {
                merchant(&$0) {
                    $0["identityCertificate"] = "expired.pem"
                    $0["identityKey"] = "expired.key"
                }
            })
        #expect(result.status == 1)
        #expect(result.stderr.hasPrefix("orchard: \(directory.path("expired.pem")): certificate expired on "))
        #expect(result.stderr.split(separator: "\n").count == 1)
    }

    @Test("a store that cannot be opened stops orchard serve with one line and status 1")
    func unopenableStore() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        try Data("a file where the state folder's parent should be".utf8).write(to: directory.url.appendingPathComponent("blocker"))
        let path = try configuration(directory) { $0["stateDirectory"] = directory.path("blocker/state") }
        let result = try await OrchardProcess.run(["serve", "--config", path, "--log-level", "critical"])
        #expect(result.status == 1)
        #expect(
            result.stderr.hasPrefix("orchard: \(directory.path("blocker/state/orchard.sqlite")): cannot open the database"),
            "\(result.stderr)")
        #expect(result.stderr.split(separator: "\n").count == 1 && result.stdout.isEmpty, "\(result.stderr)")
    }

    @Test("a configured public folder without index.html stops startup with one line")
    func publicFolderWithoutIndex() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        try FileManager.default.createDirectory(atPath: directory.path("site"), withIntermediateDirectories: true)
        let result = try await serve(
            try configuration(directory) { json in
                var server = json["server"] as? [String: Any] ?? [:]
                server["publicDirectory"] = "site"
                json["server"] = server
            })
        #expect(result.status == 1)
        #expect(result.stderr.hasPrefix("orchard: \(directory.path("site")): server.publicDirectory has no index.html"))
        #expect(result.stderr.split(separator: "\n").count == 1)
    }

    #if !OTel
        @Test("a tracing.otlp section stops a build without the OTel trait with one line naming the build to use")
        func traceExportNeedsTheTrait() async throws {
            let directory = try TemporaryDirectory()
            defer { directory.remove() }
            let result = try await serve(
                try configuration(directory) { $0["tracing"] = ["otlp": ["endpoint": "http://127.0.0.1:4318"]] })
            #expect(result.status == 1)
            #expect(
                result.stderr
                    == "orchard: tracing.otlp: this orchard was built without the OTel trait: build with --traits OTel to export spans, or remove the section\n"
            )
        }
    #endif
}
