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

    @Test("kubectl kustomize renders the Kubernetes example: probes as operations.md recommends, a migration Job")
    func kubernetes() async throws {
        let (status, output) = try await Self.tool("kubectl", ["kustomize", "Config/kubernetes"], in: Self.root)
        #expect(status == 0, "\(output)")
        for kind in ["ConfigMap", "Secret", "Service", "Deployment", "Job"] { #expect(output.contains("kind: \(kind)\n"), "\(kind)") }
        #expect(
            output.contains("readinessProbe:\n          failureThreshold: 2\n          httpGet:\n            path: /health"), "\(output)")
        #expect(
            output.contains("livenessProbe:\n          failureThreshold: 6\n          periodSeconds: 10\n          tcpSocket:"), "\(output)"
        )
        #expect(output.contains("- migrate\n        - --config\n        - /etc/orchard/orchard.json"), "\(output)")
        #expect(output.contains("- serve\n        - --config\n        - /etc/orchard/orchard.json"), "\(output)")
    }

    @Test("the Kubernetes example's configuration is one Orchard reads, on PostgreSQL with its secrets from the environment")
    func kubernetesConfiguration() throws {
        let path = Self.root.appendingPathComponent("Config/kubernetes/orchard.json").path
        let file = try ConfigurationFile.load(path: path)
        let (store, state) = try file.storeSettings(
            relativeTo: "/etc/orchard", environment: ["ORCHARD_DB_PASSWORD": "x", "ORCHARD_VAULT_KEY": String(repeating: "7e", count: 32)])
        guard case .postgres(let settings) = store else { throw Failure("the example shares PostgreSQL") }
        #expect(settings.database == "orchard" && state == "/var/lib/orchard")
        #expect(file.server?.host == "0.0.0.0" && file.payments?.vaultKey == "env:ORCHARD_VAULT_KEY")
    }

    struct Failure: Error, CustomStringConvertible {
        var description: String
        init(_ description: String) { self.description = description }
    }
}
