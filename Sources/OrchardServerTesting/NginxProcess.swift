import Foundation
import OrchardTesting
import Testing

/// Real nginx (Debian's package) on loopback, running the cluster configuration Orchard ships
/// (`Config/nginx/orchard-cluster.conf`) with only its `ADAPT` lines changed: the instances'
/// ports, loopback listeners, the test certificate and a log in a temporary folder.
public final class NginxProcess: Sendable {
    public let directory: TemporaryDirectory
    /// HTTPS (HTTP/2 when the client offers it) for shoppers.
    public let httpsPort: Int
    /// The internal listener for the shop's backend (the payments API).
    public let internalPort: Int
    private let child: ChildProcess

    public static var binary: String? {
        ["/usr/sbin/nginx", "/usr/bin/nginx"].first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    /// Starts nginx in front of Orchard instances on `upstreamPorts`, serving `domain` with
    /// `certificate`. nginx cannot be told to pick its own ports, so the free ports chosen for it
    /// may be taken by another process before it binds them: then it starts again on others.
    public init(upstreamPorts: [Int], domain: String, certificate: TestCertificate) async throws {
        guard let nginx = Self.binary else {
            Issue.record("nginx is not installed: scripts/test installs it (or apt-get install nginx)")
            throw CancellationError()
        }
        for attempt in 1...3 {
            let directory = try TemporaryDirectory()
            let started = try await Self.start(
                nginx, directory: directory, upstreamPorts: upstreamPorts, domain: domain, certificate: certificate)
            if let started {
                self.directory = directory
                httpsPort = started.https
                internalPort = started.internal
                child = started.child
                return
            }
            let log = (try? String(contentsOfFile: directory.path("error.log"), encoding: .utf8)) ?? ""
            directory.remove()
            if attempt < 3 && log.contains("Address already in use") { continue }
            Issue.record("nginx did not start: \(log.suffix(2000))")
            throw CancellationError()
        }
        throw CancellationError()
    }

    /// One start in `directory` on newly chosen free ports; nil if nginx exited instead.
    private static func start(
        _ nginx: String, directory: TemporaryDirectory, upstreamPorts: [Int], domain: String, certificate: TestCertificate
    ) async throws -> (https: Int, internal: Int, child: ChildProcess)? {
        let httpsPort = try ServerProcess.freePort()
        let internalPort = try ServerProcess.freePort()
        try directory.write("tls.pem", Array(certificate.certificatePEM.utf8))
        try directory.write("tls.key", Array(certificate.keyPEM.utf8))
        let shipped = try String(contentsOfFile: Self.shippedConfiguration, encoding: .utf8)
        try directory.write(
            "orchard.conf",
            Array(
                try Self.adapt(
                    shipped, upstreamPorts: upstreamPorts, domain: domain, directory: directory, https: httpsPort,
                    backend: internalPort
                ).utf8))
        let prefix = directory.url.path
        let user = geteuid() == 0 ? "user root;\n" : ""
        try directory.write(
            "nginx.conf",
            Array(
                """
                \(user)worker_processes 1;
                pid \(prefix)/nginx.pid;
                error_log \(prefix)/error.log warn;
                events { worker_connections 1024; }
                http {
                    client_body_temp_path \(prefix)/body;
                    proxy_temp_path \(prefix)/proxy;
                    fastcgi_temp_path \(prefix)/fastcgi;
                    uwsgi_temp_path \(prefix)/uwsgi;
                    scgi_temp_path \(prefix)/scgi;
                    include \(prefix)/orchard.conf;
                }
                """.utf8))
        let child = try ChildProcess(
            nginx, ["-p", prefix, "-c", directory.path("nginx.conf"), "-g", "daemon off;"], environment: [:],
            output: .file(directory.path("nginx.out")))
        // Its own listener, not whatever else may answer on that port.
        var ready = false
        _ = try await Eventually.until {
            ready = LoopbackPort.listening(pid: child.pid).contains(httpsPort)
            return ready || !child.isRunning
        }
        guard ready else {
            child.send(SIGKILL)
            await child.waitOffPool()
            return nil
        }
        return (httpsPort, internalPort, child)
    }

    deinit {
        child.send(SIGTERM)
        child.wait()
        directory.remove()
    }

    /// The access log: one line per request with `upstream=<address>`.
    public var accessLog: String {
        (try? String(contentsOfFile: directory.path("access.log"), encoding: .utf8)) ?? ""
    }

    public static var shippedConfiguration: String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Config/nginx/orchard-cluster.conf").path
    }

    /// The shipped file with its `ADAPT` lines changed; fails when a line to change is missing, so
    /// the test notices when the shipped file changes shape.
    public static func adapt(
        _ text: String, upstreamPorts: [Int], domain: String, directory: TemporaryDirectory, https: Int, backend: Int
    ) throws -> String {
        var text = text
        func replace(_ old: String, _ new: String) throws {
            guard text.contains(old) else {
                Issue.record("the shipped nginx configuration no longer contains \(old)")
                throw CancellationError()
            }
            text = text.replacingOccurrences(of: old, with: new)
        }
        let servers = upstreamPorts.map { "server 127.0.0.1:\($0) max_fails=3 fail_timeout=10s;" }.joined(separator: "\n    ")
        try replace(
            "server 127.0.0.1:8080 max_fails=3 fail_timeout=10s;\n    server 127.0.0.1:8081 max_fails=3 fail_timeout=10s;", servers)
        try replace("listen 443 ssl http2;\n    listen [::]:443 ssl http2;", "listen 127.0.0.1:\(https) ssl http2;")
        try replace("listen 80;\n    listen [::]:80;", "listen 127.0.0.1:\(try ServerProcess.freePort());")
        try replace("listen 127.0.0.1:8088;", "listen 127.0.0.1:\(backend);")
        try replace("server_name shop.example;", "server_name \(domain);")
        try replace("/etc/ssl/shop.example/fullchain.pem", directory.path("tls.pem"))
        try replace("/etc/ssl/shop.example/privkey.pem", directory.path("tls.key"))
        try replace("/var/log/nginx/orchard.access.log", directory.path("access.log"))
        return text
    }
}
