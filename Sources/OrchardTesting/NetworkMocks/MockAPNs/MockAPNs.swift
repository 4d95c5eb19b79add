import Foundation
import Hummingbird
import HummingbirdHTTP2
import Logging
import NIOCore
import NIOSSL
import ServiceLifecycle
import SwiftASN1
import Synchronization
import X509

/// A stand-in for Apple's push service (APNs) on loopback: HTTP/2 over TLS (ALPN `h2`, HTTP/1.1
/// beside it so a client that will not speak HTTP/2 is seen doing so), a client certificate
/// required and checked against the test CA, `POST /3/device/{token}` recorded and answered as
/// APNs answers: 200, 410 `Unregistered` for a token marked gone, or a fault.
public final class MockAPNs: Sendable {
    /// One push as received.
    public struct Push: Sendable, Equatable {
        public var token: String
        public var topic: String?
        public var pushType: String?
        public var priority: String?
        public var body: String
        /// Whether it came over HTTP/2 (its request carried the `:scheme` pseudo-header).
        public var overHTTP2: Bool
    }

    struct State {
        var pushes: [Push] = []
        var gone: Set<String> = []
        /// Answers 503 to this many pushes first.
        var failures = 0
        var waiters: [(count: Int, continuation: CheckedContinuation<[Push], Never>)] = []
    }

    private let state = Mutex(State())
    private let tls: TLSConfiguration
    private let logger: Logger
    private let running = Mutex<Task<Void, any Error>?>(nil)

    /// - Parameters:
    ///   - server: the certificate and key it presents (issued for 127.0.0.1 by the test CA).
    ///   - clientCA: the CA a client's certificate must chain to (the test PKI's, which issues Order Type IDs).
    public init(server: TestCertificate, clientCA: Certificate, logger: Logger = Logger(label: "orchard.mock-apns")) throws {
        var tls = TLSConfiguration.makeServerConfigurationWithMTLS(
            certificateChain: [.certificate(try NIOSSLCertificate(bytes: Array(server.certificatePEM.utf8), format: .pem))],
            privateKey: .privateKey(try NIOSSLPrivateKey(bytes: Array(server.keyPEM.utf8), format: .pem)),
            trustRoots: .certificates([try NIOSSLCertificate(bytes: Array(clientCA.serializeAsPEM().pemString.utf8), format: .pem)]))
        tls.minimumTLSVersion = .tlsv12
        self.tls = tls
        self.logger = logger
    }

    /// Every push received, oldest first.
    public var pushes: [Push] { state.withLock { $0.pushes } }

    /// Tokens answered 410 `Unregistered` from now on.
    public func markGone(_ token: String) { state.withLock { _ = $0.gone.insert(token.lowercased()) } }

    /// The next `count` pushes are answered 503 `ServiceUnavailable`.
    public func failNext(_ count: Int) { state.withLock { $0.failures = count } }

    /// Waits until `count` pushes have come in (no timer: a test's own deadline bounds it); returns them all.
    public func waitForPushes(_ count: Int) async -> [Push] {
        await withCheckedContinuation { continuation in
            let ready: [Push]? = state.withLock { state in
                if state.pushes.count >= count { return state.pushes }
                state.waiters.append((count, continuation))
                return nil
            }
            if let ready { continuation.resume(returning: ready) }
        }
    }

    /// Binds loopback and serves; returns the port once listening.
    public func start(host: String = "127.0.0.1", port: Int = 0) async throws -> Int {
        let router = Router()
        router.post("/3/device/{token}") { [self] request, context in try await receive(request, context) }
        let (stream, listening) = AsyncStream<Int>.makeStream()
        let app = Application(
            router: router, server: try .http2Upgrade(tlsConfiguration: tls),
            configuration: .init(address: .hostname(host, port: port), serverName: "mock-apns"),
            onServerRunning: { channel in
                listening.yield(channel.localAddress?.port ?? 0)
                listening.finish()
            }, logger: logger)
        let task = Task { try await app.runService(gracefulShutdownSignals: []) }
        running.withLock { $0 = task }
        for await bound in stream { return bound }
        task.cancel()
        throw CancellationError()
    }

    /// Stops serving.
    public func stop() {
        running.withLock { task in
            task?.cancel()
            task = nil
        }
    }

    static func header(_ request: Request, _ name: String) -> String? {
        request.headers.first { $0.name.canonicalName == name }?.value
    }

    func receive(_ request: Request, _ context: BasicRequestContext) async throws -> Response {
        var body = try await request.body.collect(upTo: 8192)
        let push = Push(
            token: try context.parameters.require("token"), topic: Self.header(request, "apns-topic"),
            pushType: Self.header(request, "apns-push-type"), priority: Self.header(request, "apns-priority"),
            body: body.readString(length: body.readableBytes) ?? "", overHTTP2: request.head.scheme != nil)
        let (answer, resumed) = state.withLock { state -> ((HTTPResponse.Status, String?), [(CheckedContinuation<[Push], Never>, [Push])]) in
            state.pushes.append(push)
            let answer: (HTTPResponse.Status, String?)
            if state.failures > 0 {
                state.failures -= 1
                answer = (.serviceUnavailable, "ServiceUnavailable")
            } else if state.gone.contains(push.token.lowercased()) {
                answer = (.gone, "Unregistered")
            } else if push.topic == nil {
                answer = (.badRequest, "MissingTopic")
            } else {
                answer = (.ok, nil)
            }
            let done = state.waiters.filter { $0.count <= state.pushes.count }
            state.waiters.removeAll { $0.count <= state.pushes.count }
            return (answer, done.map { ($0.continuation, state.pushes) })
        }
        for (continuation, pushes) in resumed { continuation.resume(returning: pushes) }
        guard let reason = answer.1 else { return Response(status: answer.0) }
        return Response(
            status: answer.0, headers: [.contentType: "application/json"],
            body: .init(byteBuffer: ByteBuffer(string: #"{"reason":"\#(reason)"}"#)))
    }
}
