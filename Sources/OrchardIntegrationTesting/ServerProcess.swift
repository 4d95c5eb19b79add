import CurlClient
import Foundation
import OrchardConfiguration
import OrchardCore
import OrchardServer
import OrchardServerTesting
import OrchardServices
import OrchardTesting
import Synchronization
import Testing

/// A real `orchard serve` process on loopback, charging through mock Worldline, that a test
/// kills with SIGKILL and starts again on the same state folder.
///
/// The server listens on a port the kernel picks (`server.port` 0), read from what the process
/// listens on once it runs: a free port chosen beforehand can be taken by another process
/// before the server binds it ("Address already in use"). Each start may get a new port.
public final class ServerProcess: Sendable {
    public let directory: TemporaryDirectory
    public let client: CurlHTTPClient
    public let minter = TokenMinter(chain: ServerHarness.tokenChain)
    private let process = Mutex<ChildProcess?>(nil)
    private let bound = Mutex(0)
    private let environment: [String: String]
    private let arguments: [String]

    /// Writes the configuration: the test merchant on Worldline (the mock at `processorURL`; record
    /// only when nil), the admin API, a reconciler that runs every second, then `configure`'s
    /// changes; `environment` joins the process's, `arguments` join `serve`'s, and sessions go to a
    /// mock gateway on `gatewayPort` (nothing listens on the default). `prepare` runs first and may
    /// write files to the server's folder.
    public init(
        processorURL: String?, processorTimeoutMilliseconds: Int = 1000, environment extra: [String: String] = [:],
        arguments: [String] = [], gatewayPort: Int = 9, configure: (inout ConfigurationFile) -> Void = { _ in },
        prepare: (inout ConfigurationFile, TemporaryDirectory) throws -> Void = { _, _ in }
    ) throws {
        directory = try TemporaryDirectory()
        self.arguments = arguments
        var file = try ServerHarness.configurationFile(gatewayPort: gatewayPort, directory: directory)
        try prepare(&file, directory)
        file.server?.port = 0
        if let processorURL {
            file.merchants[0].processor = ProcessorFixture.processor(
                .worldlineEncrypted, baseURL: processorURL, timeout: processorTimeoutMilliseconds)
        }
        file.payments?.reconcileIntervalSeconds = 1
        file.payments?.reconcileFirstDelaySeconds = 1
        file.payments?.reconcileMaximumDelaySeconds = 2
        file.payments?.reconcileMaximumAttempts = 100
        MoreMerchants.addAdmin(&file)
        configure(&file)
        let encoder = JSONEncoder()
        encoder.outputFormatting = .prettyPrinted
        try directory.write("orchard.json", Array(try encoder.encode(file)))
        _ = FileManager.default.createFile(atPath: directory.path("server.log"), contents: nil)
        environment = ProcessorFixture.environment.merging(MoreMerchants.environment) { $1 }.merging(["LOG_LEVEL": "notice"]) { $1 }
            .merging(extra) { $1 }
        client = try CurlHTTPClient(
            configuration: .init(timeouts: CurlTimeouts(connect: .seconds(2), total: .seconds(8)), allowedSchemes: ["http"]))
    }

    deinit {
        // A process the test left running: SIGKILL ends it at once, so this short wait is fine here.
        if let child = process.withLock({ $0.take() }) {
            child.send(SIGKILL)
            child.wait()
        }
        client.shutdown()
        directory.remove()
    }

    /// The port the running server answers on (0 before its first start).
    public var port: Int { bound.withLock { $0 } }

    /// Every TCP port the running process listens on: the public port, and the metrics
    /// listener's when one is configured.
    public var listeners: Set<Int> {
        guard let child = process.withLock({ $0 }) else { return [] }
        return LoopbackPort.listening(pid: child.pid)
    }

    public var databasePath: String { directory.path("state/orchard.sqlite") }

    /// What the server logged so far.
    public var log: String {
        (try? String(contentsOfFile: directory.path("server.log"), encoding: .utf8)) ?? ""
    }

    /// Starts the server and waits until it answers /health on one of the ports it listens on
    /// (the metrics listener does not serve /health).
    public func start() async throws {
        let child = try ChildProcess(
            OrchardProcess.orchard.path, ["serve", "--config", directory.path("orchard.json")] + arguments, environment: environment,
            output: .file(directory.path("server.log")))
        process.withLock { $0 = child }
        var ready = false
        var lastTry = "no port listened on"
        _ = try await Eventually.until {
            for candidate in LoopbackPort.listening(pid: child.pid).sorted() where !ready {
                do {
                    let health = try await send("GET", "/health", port: candidate)
                    lastTry = "port \(candidate) answered /health \(health.status)"
                    if health.status == 200 {
                        bound.withLock { $0 = candidate }
                        ready = true
                    }
                } catch {
                    lastTry = "port \(candidate): \(error)"
                }
            }
            return ready || !child.isRunning
        }
        if ready { return }
        let ended = child.isRunning ? "still running, not answering /health: \(lastTry)" : ChildProcess.describe(child.wait())
        let stacks = child.isRunning ? await Self.threadStacks(child.pid) : ""
        Issue.record("orchard serve did not start (\(ended)); the last 40 lines of its output:\n\(child.stderrTail())\(stacks)")
        throw CancellationError()
    }

    /// Where each thread of a process that hangs is, from gdb (Debian's, when installed): what it
    /// waits for is the cause, and the process's own log says nothing of it.
    static func threadStacks(_ pid: pid_t) async -> String {
        let gdb = ["/usr/bin/gdb", "-p", "\(pid)", "-batch", "-ex", "thread apply all bt 14"]
        guard FileManager.default.isExecutableFile(atPath: gdb[0]),
            let result = try? await OrchardProcess.run(Array(gdb.dropFirst()), executable: URL(fileURLWithPath: gdb[0]))
        else { return "" }
        let frames = String(decoding: result.stdout, as: UTF8.self).split(separator: "\n").filter {
            $0.hasPrefix("#") || $0.hasPrefix("Thread")
        }
        return "\nits threads (gdb):\n" + frames.prefix(400).joined(separator: "\n")
    }

    /// Runs another `orchard` command on this server's configuration and environment.
    public func command(_ arguments: [String]) async throws -> OrchardProcess.Result {
        try await OrchardProcess.run(arguments + ["--config", directory.path("orchard.json")], environment: environment)
    }

    /// SIGKILL: no shutdown, no last write.
    public func kill() async {
        guard let child = process.withLock({ $0.take() }) else { return }
        child.send(SIGKILL)
        await child.waitOffPool()
    }

    /// SIGTERM, and waits for the exit (off the cooperative pool: a graceful shutdown takes a while).
    public func stop() async {
        guard let child = process.withLock({ $0.take() }) else { return }
        child.send(SIGTERM)
        await child.waitOffPool()
    }

    /// Sends `signal` and returns at once.
    public func signal(_ signal: Int32) {
        process.withLock { $0 }?.send(signal)
    }

    /// Waits for the process to end, without blocking a thread: its exit status, or 128 + the
    /// signal that ended it; nil if it still runs when ``Eventually/patience`` is out (or was never started).
    public func exitStatus() async -> Int32? {
        guard let child = process.withLock({ $0 }) else { return nil }
        guard (try? await Eventually.until { !child.isRunning }) == true else { return nil }
        process.withLock { $0 = nil }
        return child.wait()
    }

    /// What the process wrote to standard output and error so far.
    public var output: String { (try? String(contentsOfFile: directory.path("server.log"), encoding: .utf8)) ?? "" }

    public func send(_ method: String, _ path: String, body: [UInt8]? = nil, admin: Bool = false, port: Int? = nil) async throws
        -> CurlResponse
    {
        let port = port ?? self.port
        var headers: [(name: String, value: String)] = [(name: "Host", value: ServerHarness.domain)]
        if body != nil { headers.append((name: "Content-Type", value: "application/json")) }
        if admin { headers += MoreMerchants.authorization }
        return try await client.execute(CurlRequest(method: method, url: "http://127.0.0.1:\(port)\(path)", headers: headers, body: body))
    }

    /// A new order of 9.90 EUR: its ID and Apple Pay request.
    public func order() async throws -> (id: String, request: [String: Any]) {
        let response = try await send("POST", "/api/orders", body: Array(#"{"items": [{"productId": "apple", "quantity": 2}]}"#.utf8))
        guard response.status == 201, let json = response.json, let id = json["orderId"] as? String,
            let request = json["paymentRequest"] as? [String: Any]
        else { throw ServerUnavailable() }
        return (id, request)
    }

    /// The shopper taps Pay with a fresh token.
    public func pay(_ id: String, _ request: [String: Any]) async throws -> CurlResponse {
        let (body, _) = try AuthorizeBody.make(id, request, minter: minter)
        return try await send("POST", "/api/apple-pay/authorize", body: body)
    }

    /// The order's payments as the admin API lists them: (id, state, reference).
    public func payments(order: String) async throws -> [(id: String, state: String, reference: String)] {
        let response = try await send("GET", "/admin/payments?order=\(order)", admin: true)
        let list = response.json?["payments"] as? [[String: Any]] ?? []
        return list.map { ($0["id"] as? String ?? "", $0["state"] as? String ?? "", $0["reference"] as? String ?? "") }
    }

    public struct ServerUnavailable: Error {}

    /// A loopback port nothing listens on now.
    public static func freePort() throws -> Int {
        guard let port = LoopbackPort.free() else { throw ServerUnavailable() }
        return port
    }
}
