import Crypto
import Foundation
import OrchardConfiguration
import OrchardCore
import OrchardServer
import OrchardServices
import OrchardTesting
import Testing

/// The deployment files, checked by the tools that read them: the systemd unit by
/// `systemd-analyze` (verified, and its exposure score no worse than docs/operations.md states),
/// the Dockerfile by hadolint, the Kubernetes example rendered by `kubectl kustomize`.
/// scripts/bootstrap installs the three.
@Suite("Deployment files: systemd unit, Dockerfile, Kubernetes")
struct DeploymentFilesTests {
    static let root = OrchardProcess.repositoryRoot
    static let unit = root.appendingPathComponent("Config/systemd/orchard.service")
    static let operations = root.appendingPathComponent("docs/operations.md")

    /// Runs a program found on the PATH; its status and both streams in one text.
    static func tool(_ name: String, _ arguments: [String], in folder: URL? = nil) async throws -> (status: Int32, output: String) {
        let result = try await OrchardProcess.run(
            [name] + arguments, executable: URL(fileURLWithPath: "/usr/bin/env"), currentDirectory: folder)
        if result.status == 127 { Issue.record("\(name) is not installed: scripts/test installs it (scripts/bootstrap tests)") }
        return (result.status, String(decoding: result.stdout, as: UTF8.self) + result.stderr)
    }

    /// The unit as installed, but starting the orchard built here (verify checks that ExecStart exists).
    static func unitForVerify(in directory: TemporaryDirectory) throws -> String {
        let text = try String(contentsOf: unit, encoding: .utf8)
        #expect(text.contains("ExecStart=/usr/local/bin/orchard serve --config /etc/orchard/orchard.json"))
        let path = directory.path("orchard.service")
        try text.replacingOccurrences(of: "ExecStart=/usr/local/bin/orchard ", with: "ExecStart=\(OrchardProcess.orchard.path) ")
            .write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    /// The first number after `marker` in `text`.
    static func number(after marker: String, in text: String) -> Double? {
        guard let range = text.range(of: marker) else { return nil }
        return Double(text[range.upperBound...].drop { $0 == " " }.prefix { $0.isNumber || $0 == "." })
    }

    @Test("systemd-analyze verifies the unit without a warning")
    func unitVerifies() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let (status, output) = try await Self.tool("systemd-analyze", ["verify", "--man=no", try Self.unitForVerify(in: directory)])
        #expect(status == 0 && output.isEmpty, "\(output)")
    }

    @Test("the unit's exposure score (systemd-analyze security) is no worse than docs/operations.md states")
    func unitExposure() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let (status, output) = try await Self.tool(
            "systemd-analyze", ["security", "--offline=true", "--no-pager", try Self.unitForVerify(in: directory)])
        #expect(status == 0, "\(output)")
        let score = try #require(Self.number(after: "Overall exposure level for orchard.service:", in: output), "\(output)")
        let documented = try #require(
            Self.number(after: "an exposure level of", in: try String(contentsOf: Self.operations, encoding: .utf8)),
            "docs/operations.md states the unit's exposure level")
        #expect(score <= documented, "the exposure level rose from \(documented) to \(score):\n\(output)")
        for setting in ["ProtectSystem=strict", "CapabilityBoundingSet=\n", "SystemCallFilter=@system-service", "NoNewPrivileges=yes"] {
            #expect(try String(contentsOf: Self.unit, encoding: .utf8).contains(setting), "\(setting)")
        }
    }

    @Test("the unit waits for the drain: TimeoutStopSec is above server.drainTimeoutSeconds' default")
    func unitOutlastsDrain() throws {
        let text = try String(contentsOf: Self.unit, encoding: .utf8)
        let stop = try #require(Self.number(after: "TimeoutStopSec=", in: text))
        #expect(Duration.seconds(stop) > ServerConfiguration.defaultDrainTimeout)
        #expect(text.contains("Restart=on-failure"))
    }

    @Test("hadolint passes the Dockerfile, which builds the orchard product and runs it as a user with a health check")
    func dockerfile() async throws {
        let (status, output) = try await Self.tool("hadolint", ["--no-color", "Dockerfile"], in: Self.root)
        #expect(status == 0, "\(output)")
        let text = try String(contentsOf: Self.root.appendingPathComponent("Dockerfile"), encoding: .utf8)
        for part in [
            "swift build -c release --product orchard --static-swift-stdlib", "FROM debian:bookworm-slim", "libcurl4", "libsqlite3-0",
            "libssl3", "ca-certificates", "USER 10001", "HEALTHCHECK", "/health", "VOLUME [\"/var/lib/orchard\"]", "EXPOSE 8080",
        ] {
            #expect(text.contains(part), "the Dockerfile lacks \(part)")
        }
    }

    @Test("kubectl kustomize renders the Kubernetes example: probes as monitoring.md recommends, a migration Job")
    func kubernetes() async throws {
        let (status, output) = try await Self.tool("kubectl", ["kustomize", "Config/kubernetes"], in: Self.root)
        #expect(status == 0, "\(output)")
        for kind in ["ConfigMap", "Secret", "Service", "Deployment", "Job", "Ingress", "NetworkPolicy"] {
            #expect(output.contains("kind: \(kind)\n"), "\(kind)")
        }
        #expect(
            output.contains("readinessProbe:\n          failureThreshold: 2\n          httpGet:\n            path: /health"), "\(output)")
        #expect(
            output.contains("livenessProbe:\n          failureThreshold: 6\n          periodSeconds: 10\n          tcpSocket:"), "\(output)"
        )
        #expect(output.contains("- migrate\n        - --config\n        - /etc/orchard/orchard.json"), "\(output)")
        #expect(output.contains("- serve\n        - --config\n        - /etc/orchard/orchard.json"), "\(output)")
    }

    @Test("the Kubernetes example is hardened: no service-account token, secrets as files, images by digest, a NetworkPolicy")
    func kubernetesHardened() async throws {
        let (status, output) = try await Self.tool("kubectl", ["kustomize", "Config/kubernetes"], in: Self.root)
        #expect(status == 0, "\(output)")
        let documents = output.components(separatedBy: "\n---\n")
        func document(_ kind: String) -> String { documents.first { $0.contains("\nkind: \(kind)\n") } ?? "" }
        // Both pod templates, the Deployment's and the Job's.
        #expect(output.components(separatedBy: "automountServiceAccountToken: false").count - 1 == 2, "\(output)")
        // Secrets reach the process as files only: an environment variable shows in `kubectl describe` and /proc.
        for leak in ["envFrom:", "secretKeyRef:", "env:\n"] { #expect(!output.contains(leak), "\(leak)") }
        for kind in ["Deployment", "Job"] {
            #expect(document(kind).contains("mountPath: /etc/orchard/secrets"), "\(kind) mounts the secrets")
            #expect(document(kind).contains("secretName: orchard-secrets"), "\(kind)")
        }
        // Every image by digest, none by a tag that can move.
        let images = output.split(separator: "\n").filter { $0.contains("image: ") }
        #expect(images.count == 2 && images.allSatisfy { $0.contains("@sha256:") && !$0.contains(":latest") }, "\(images)")
        // The Ingress routes no private API; the policy admits only the ingress controller and this namespace.
        let ingress = document("Ingress")
        #expect(ingress.contains("path: /api\n") && ingress.contains("path: /.well-known/apple-developer-merchantid-domain-association"))
        for path in ["path: /\n", "path: /v1", "path: /admin", "path: /metrics", "path: /openapi.json"] {
            #expect(!ingress.contains(path), "the Ingress routes \(path)")
        }
        let policy = document("NetworkPolicy")
        #expect(policy.contains("- Ingress") && policy.contains("namespaceSelector:") && policy.contains("podSelector: {}"), "\(policy)")
    }

    /// The example's folder as a pod sees it, under `root` instead of /etc/orchard: its
    /// configuration with `trustedProxies` filled in as `proxies`, the test PKI's files for its
    /// merchant, and the secret files the Secret mounts.
    static func kubernetesFolder(_ root: TemporaryDirectory, proxies: String?) throws -> String {
        let example = try String(contentsOf: Self.root.appendingPathComponent("Config/kubernetes/orchard.json"), encoding: .utf8)
        var text = example.replacingOccurrences(of: "/etc/orchard/", with: root.path("") + "/")
        if let proxies {
            let placeholder = try #require(
                text.range(of: #""ADAPT: [^"]*""#, options: .regularExpression), "trustedProxies is an ADAPT value to fill in")
            text.replaceSubrange(placeholder, with: "\"\(proxies)\"")
        }
        try root.write("orchard.json", Array(text.utf8))
        let merchant = "merchant.com.example.shop"
        let pki = TestMaterial.shared.pki
        try FileManager.default.createDirectory(atPath: root.path("keys"), withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: root.path("secrets"), withIntermediateDirectories: true)
        try pki.issueMerchantIdentity(merchantIdentifier: merchant)
            .write(certificateTo: root.path("keys/identity.pem"), keyTo: root.path("keys/identity.key"))
        let processingKey = P256.KeyAgreement.PrivateKey()
        let processing = try pki.processingCertificatePEM(merchantIdentifier: merchant, for: processingKey.publicKey)
        try root.write("keys/apple_pay.cer", Array(processing.utf8))
        try root.write("keys/apple_pay.key", Array(processingKey.pemRepresentation.utf8))
        try root.write("keys/apple-developer-merchantid-domain-association", Array("association".utf8))
        // As `kubectl create secret --from-file` stores them: with the file's trailing line break.
        try root.write("secrets/db-password", Array("correct horse\n".utf8))
        try root.write("secrets/vault-key", Array((String(repeating: "7e", count: 32) + "\n").utf8))
        return root.path("orchard.json")
    }

    @Test("the Kubernetes example's configuration loads with the real loader, its secrets from the mounted files")
    func kubernetesConfiguration() throws {
        let root = try TemporaryDirectory()
        defer { root.remove() }
        let path = try Self.kubernetesFolder(root, proxies: "10.244.0.0/16")
        let configuration = try ServerConfiguration.load(path: path, environment: [:], processors: [RecordOnlyDriver()])
        guard case .postgres(let settings) = configuration.store else { throw Failure("the example shares PostgreSQL") }
        #expect(settings.database == "orchard" && configuration.stateDirectory == "/var/lib/orchard")
        #expect(settings.password?.value == "correct horse", "the file's trailing line break is not part of the password")
        #expect(configuration.vault != nil && configuration.host == "0.0.0.0")
        #expect(configuration.trustedProxies == [try #require(IPNetwork("10.244.0.0/16"))])
    }

    @Test("the Kubernetes example as shipped trusts no proxy it does not name: serve refuses it until trustedProxies is filled in")
    func kubernetesConfigurationUnadapted() throws {
        let root = try TemporaryDirectory()
        defer { root.remove() }
        let path = try Self.kubernetesFolder(root, proxies: nil)
        #expect {
            try ServerConfiguration.load(path: path, environment: [:], processors: [RecordOnlyDriver()])
        } throws: { error in
            "\(error)".contains("server.trustedProxies: ADAPT")
        }
    }

    struct Failure: Error, CustomStringConvertible {
        var description: String
        init(_ description: String) { self.description = description }
    }
}
