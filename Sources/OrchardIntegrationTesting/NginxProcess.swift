import Foundation
import OrchardServerTesting
import OrchardTesting
import Testing

/// Real nginx (Debian's package) on loopback, running the cluster configuration Orchard ships
/// (`Config/nginx/orchard-cluster.conf`) with only its `ADAPT` lines changed: the instances'
/// ports, loopback listeners, the test certificate and a log in a temporary folder. Or the
/// shop's snippet (`orchard-locations.conf`), included unchanged in a shop's HTTPS server.
public final class NginxProcess: Sendable {
    /// Which shipped file runs.
    public enum Shipped: Sendable {
        /// `orchard-cluster.conf`: both listeners.
        case cluster
        /// `orchard-locations.conf` in a shop's server block on ``httpsPort`` (no internal listener).
        case locations
    }

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
    /// `edit` changes the shipped file further, as an operator would (uncommenting a line).
    public init(
        upstreamPorts: [Int], domain: String, certificate: TestCertificate, shipped: Shipped = .cluster,
        edit: @escaping (String) throws -> String = { $0 }
    ) async throws {
        guard let nginx = Self.binary else {
            Issue.record("nginx is not installed: scripts/test installs it (or apt-get install nginx)")
            throw CancellationError()
        }
        for attempt in 1...3 {
            let directory = try TemporaryDirectory()
            let started = try await Self.start(
                nginx, directory: directory, upstreamPorts: upstreamPorts, domain: domain, certificate: certificate, shipped: shipped,
                edit: edit)
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
        _ nginx: String, directory: TemporaryDirectory, upstreamPorts: [Int], domain: String, certificate: TestCertificate,
        shipped: Shipped, edit: (String) throws -> String
    ) async throws -> (https: Int, internal: Int, child: ChildProcess)? {
        let httpsPort = try ServerProcess.freePort()
        let internalPort = try ServerProcess.freePort()
        try directory.write("tls.pem", Array(certificate.certificatePEM.utf8))
        try directory.write("tls.key", Array(certificate.keyPEM.utf8))
        let configuration: String
        switch shipped {
        case .cluster:
            configuration = try edit(
                Self.adapt(
                    try String(contentsOfFile: Self.shippedConfiguration, encoding: .utf8), upstreamPorts: upstreamPorts,
                    domain: domain, directory: directory, https: httpsPort, backend: internalPort))
        case .locations:
            try directory.write(
                "orchard-locations.conf", Array(try edit(String(contentsOfFile: Self.shippedLocations, encoding: .utf8)).utf8))
            configuration = Self.shopServer(upstreamPorts: upstreamPorts, domain: domain, directory: directory, https: httpsPort)
        }
        try directory.write("orchard.conf", Array(configuration.utf8))
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

    public static var shippedLocations: String {
        URL(fileURLWithPath: shippedConfiguration).deletingLastPathComponent().appendingPathComponent("orchard-locations.conf").path
    }

    /// A shop's HTTPS server that includes the snippet (copied to `directory`) as its header
    /// says, with the `orchard` upstream it asks for in the `http` block; the shop's own pages 404.
    static func shopServer(upstreamPorts: [Int], domain: String, directory: TemporaryDirectory, https: Int) -> String {
        """
        upstream orchard { \(upstreamPorts.map { "server 127.0.0.1:\($0);" }.joined(separator: " ")) keepalive 16; }
        server {
            listen 127.0.0.1:\(https) ssl http2;
            server_name \(domain);
            ssl_certificate \(directory.path("tls.pem"));
            ssl_certificate_key \(directory.path("tls.key"));
            access_log \(directory.path("access.log"));
            location / { return 404; }
            include \(directory.path("orchard-locations.conf"));
        }
        """
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
