import Foundation
import Logging
import NIOCore
import NIOHTTP1
import NIOHTTP2
import NIOPosix
import NIOSSL
import SwiftASN1
import Synchronization
import X509

/// A stand-in for Apple's push service (APNs) on loopback, on SwiftNIO's HTTP/2: TLS with ALPN
/// `h2` (and `http/1.1` beside it, so a client that will not speak HTTP/2 is seen doing so), a
/// client certificate required and checked against the test CA, `POST /3/device/{token}` recorded
/// and answered as APNs answers: 200, 410 `Unregistered` for a token marked gone, or a fault.
public final class MockAPNs: Sendable {
    /// One push as received.
    public struct Push: Sendable, Equatable {
        public var token: String
        public var topic: String?
        public var pushType: String?
        public var priority: String?
        public var body: String
        /// Whether it came over an HTTP/2 stream.
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
    private let sslContext: NIOSSLContext
    private let channels = ChannelTracker()
    let logger: Logger

    /// - Parameters:
    ///   - server: the certificate and key it presents (issued for 127.0.0.1 by the test CA).
    ///   - clientCA: the CA a client's certificate must chain to (the test PKI's, which issues Order Type IDs).
    public init(server: TestCertificate, clientCA: Certificate, logger: Logger = Logger(label: "orchard.mock-apns")) throws {
        var tls = TLSConfiguration.makeServerConfigurationWithMTLS(
            certificateChain: [.certificate(try NIOSSLCertificate(bytes: Array(server.certificatePEM.utf8), format: .pem))],
            privateKey: .privateKey(try NIOSSLPrivateKey(bytes: Array(server.keyPEM.utf8), format: .pem)),
            trustRoots: .certificates([try NIOSSLCertificate(bytes: Array(clientCA.serializeAsPEM().pemString.utf8), format: .pem)]))
        tls.minimumTLSVersion = .tlsv12
        tls.applicationProtocols = ["h2", "http/1.1"]
        self.sslContext = try NIOSSLContext(configuration: tls)
        self.logger = logger
    }

    /// Every push received, oldest first.
    public var pushes: [Push] { state.withLock { $0.pushes } }

    /// Tokens answered 410 `Unregistered` from now on.
    public func markGone(_ token: String) { state.withLock { _ = $0.gone.insert(token.lowercased()) } }

    /// The next `count` pushes are answered 503 `ServiceUnavailable`.
    public func failNext(_ count: Int) { state.withLock { $0.failures = count } }

    /// Waits until `count` pushes have come in (no timer: the test's own time limit bounds it); returns them all.
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

    /// Binds loopback and serves; returns the port.
    public func start(host: String = "127.0.0.1", port: Int = 0) async throws -> Int {
        let bootstrap = ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { [self] channel in configure(channel) }
        let channel = try await bootstrap.bind(host: host, port: port).get()
        channels.listening(on: channel)
        let bound = channel.localAddress?.port ?? 0
        logger.info("mock APNs listening", metadata: ["url": "https://\(host):\(bound)"])
        return bound
    }

    /// Serves while `body` runs with the port, then stops, whether `body` throws or not.
    public func serving<T>(_ body: (Int) async throws -> T) async throws -> T {
        let port = try await start()
        do {
            let result = try await body(port)
            await stop()
            return result
        } catch {
            await stop()
            throw error
        }
    }

    /// Stops listening and closes every open connection.
    public func stop() async {
        await channels.closeAll()
    }

    private func configure(_ channel: any Channel) -> EventLoopFuture<Void> {
        channels.track(channel)
        do {
            try channel.pipeline.syncOperations.addHandler(NIOSSLServerHandler(context: sslContext))
        } catch {
            return channel.eventLoop.makeFailedFuture(error)
        }
        return channel.configureHTTP2SecureUpgrade(
            h2ChannelConfigurator: { [self] connection in
                connection.configureHTTP2Pipeline(mode: .server) { stream in
                    stream.eventLoop.makeCompletedFuture {
                        try stream.pipeline.syncOperations.addHandler(HTTP2FramePayloadToHTTP1ServerCodec())
                        try stream.pipeline.syncOperations.addHandler(MockAPNsHandler(apns: self, overHTTP2: true))
                    }
                }.map { _ in }
            },
            http1ChannelConfigurator: { [self] connection in
                connection.eventLoop.makeCompletedFuture {
                    try connection.pipeline.syncOperations.configureHTTPServerPipeline(withErrorHandling: true)
                    try connection.pipeline.syncOperations.addHandler(MockAPNsHandler(apns: self, overHTTP2: false))
                }
            })
    }

    /// Records a push and says what APNs answers it: a status and its `reason`.
    func answer(_ push: Push) -> (status: HTTPResponseStatus, reason: String?) {
        let (answer, resumed) = state.withLock { state in
            state.pushes.append(push)
            let answer: (HTTPResponseStatus, String?)
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
            let done = state.waiters.filter { $0.count <= state.pushes.count }.map(\.continuation)
            state.waiters.removeAll { $0.count <= state.pushes.count }
            return (answer, done.map { ($0, state.pushes) })
        }
        for (continuation, pushes) in resumed { continuation.resume(returning: pushes) }
        logger.info(
            "mock APNs received a push",
            metadata: ["token": "\(push.token.prefix(8))…", "topic": "\(push.topic ?? "-")", "status": "\(answer.0.code)"])
        return answer
    }
}

/// One request on a connection (HTTP/1.1) or a stream (HTTP/2): `POST /3/device/{token}` only.
final class MockAPNsHandler: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    let apns: MockAPNs
    let overHTTP2: Bool
    var collector = RequestCollector(limit: 8192)

    init(apns: MockAPNs, overHTTP2: Bool) {
        self.apns = apns
        self.overHTTP2 = overHTTP2
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard let (head, body, _) = collector.consume(unwrapInboundIn(data)) else { return }
        let prefix = "/3/device/"
        let answer: (status: HTTPResponseStatus, reason: String?)
        if head.method == .POST, head.uri.hasPrefix(prefix) {
            answer = apns.answer(
                MockAPNs.Push(
                    token: String(head.uri.dropFirst(prefix.count)), topic: head.headers.first(name: "apns-topic"),
                    pushType: head.headers.first(name: "apns-push-type"), priority: head.headers.first(name: "apns-priority"),
                    body: String(decoding: body, as: UTF8.self), overHTTP2: overHTTP2))
        } else {
            answer = (.notFound, "BadPath")
        }
        let bytes = answer.reason.map { Array(#"{"reason":"\#($0)"}"#.utf8) } ?? []
        var headers = HTTPHeaders([("content-length", "\(bytes.count)")])
        if !bytes.isEmpty { headers.add(name: "content-type", value: "application/json") }
        context.write(
            wrapOutboundOut(.head(HTTPResponseHead(version: head.version, status: answer.status, headers: headers))), promise: nil)
        if !bytes.isEmpty { context.write(wrapOutboundOut(.body(.byteBuffer(ByteBuffer(bytes: bytes)))), promise: nil) }
        context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
    }
}
