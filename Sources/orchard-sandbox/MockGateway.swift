import ArgumentParser
import Foundation
import Logging
import OrchardConfiguration
import OrchardRuntime
import OrchardServices
import OrchardTesting

/// Fault-injection flags shared by `mock-gateway` and `demo`.
struct FaultOptions: ParsableArguments {
    @Option(help: ArgumentHelp("The mock gateway delays every session answer by this many milliseconds.", valueName: "ms"))
    var latencyMs: Int = 0

    @Option(
        help: ArgumentHelp(
            "The mock gateway answers every session request with this HTTP status (400-599) and an Apple-shaped error.",
            valueName: "status"))
    var failStatus: Int?

    @Flag(help: "The mock gateway resets the connection instead of answering a session request.")
    var reset = false

    @Option(
        help: ArgumentHelp(
            "The mock gateway sends half of each session answer, then the rest this many milliseconds later.", valueName: "ms"))
    var slowBodyMs: Int?

    func validate() throws {
        guard latencyMs >= 0, (slowBodyMs ?? 0) >= 0 else { throw ValidationError("delays must not be negative") }
        if let failStatus, !(400...599).contains(failStatus) { throw ValidationError("--fail-status must be 400-599") }
    }

    var faults: MockGatewayFaults {
        MockGatewayFaults(
            latency: .milliseconds(latencyMs), status: failStatus, resetConnection: reset,
            slowBody: slowBodyMs.map { .milliseconds($0) })
    }
}

struct MockGateway: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "mock-gateway",
        abstract: "Run a mock of Apple's merchant-session gateway (mutual TLS, test PKI) on loopback.",
        discussion: """
            Creates a test PKI in --state-dir if there is none and writes orchard.json there, so \
            `orchard serve --config <state-dir>/orchard.json` talks to this mock. Counts are served at \
            GET /_mock/stats (client certificate required).
            """)

    @Option(help: "Folder for the test PKI and the generated server configuration.")
    var stateDir: String = ".orchard/mock-gateway"

    @Option(help: "Loopback address to listen on.")
    var host: String = "127.0.0.1"

    @Option(help: "Port to listen on (0: any free port).")
    var port: Int = 8443

    @Option(help: "Port written into the generated orchard.json for the Orchard server.")
    var serverPort: Int = 8080

    @OptionGroup var faults: FaultOptions
    @OptionGroup var logging: LoggingOptions

    func validate() throws {
        guard ["127.0.0.1", "::1", "localhost"].contains(host) else {
            throw ValidationError("the mock gateway listens on loopback only (127.0.0.1, ::1 or localhost)")
        }
    }

    func run() async throws {
        let logger = logging.bootstrap(label: "orchard.mock-gateway")
        let environment = try DemoEnvironment.prepared(stateDir)
        let gateway = try environment.makeGateway(host: host, port: port, faults: faults.faults)
        let bound = try await gateway.start()
        let config = try environment.writeServerConfiguration(gatewayPort: bound, serverPort: serverPort, publicDirectory: nil)
        logger.info("mock gateway ready", metadata: ["url": "https://\(host):\(bound)", "config": "\(config)"])
        say("mock Apple gateway: https://\(host):\(bound)  (orchard serve --config \(config))")
        await waitForTermination()
        await gateway.stop()
    }
}

/// Suspends until SIGINT or SIGTERM.
func waitForTermination() async {
    let signals = SignalSources()
    await withCheckedContinuation { continuation in signals.start(continuation) }
    withExtendedLifetime(signals) {}
}

/// Holds the dispatch sources for as long as the wait lasts.
final class SignalSources: @unchecked Sendable {
    private var sources: [any DispatchSourceSignal] = []
    private let lock = NSLock()
    private var continuation: CheckedContinuation<Void, Never>?

    func start(_ continuation: CheckedContinuation<Void, Never>) {
        self.continuation = continuation
        sources = [SIGINT, SIGTERM].map { signalNumber in
            signal(signalNumber, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: signalNumber, queue: .global())
            source.setEventHandler { [weak self] in self?.fire() }
            source.resume()
            return source
        }
    }

    private func fire() {
        lock.lock()
        let pending = continuation
        continuation = nil
        lock.unlock()
        pending?.resume()
    }
}
