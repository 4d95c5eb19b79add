import Crypto
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
        /// `certificate` (a client certificate the test CA issued) or `token` (a provider token the key signed).
        public var authentication: String
    }

    /// The provider-token key APNs knows for a team: what a token must be signed with and name.
    public struct TokenKey: Sendable {
        public var key: P256.Signing.PublicKey
        public var keyId: String
        public var teamId: String
        public init(key: P256.Signing.PublicKey, keyId: String, teamId: String) {
            self.key = key
            self.keyId = keyId
            self.teamId = teamId
        }
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
    let tokenKey: TokenKey?
    let logger: Logger

    /// - Parameters:
    ///   - server: the certificate and key it presents (issued for 127.0.0.1 by the test CA).
    ///   - clientCA: the CA a client's certificate must chain to (the test PKI's, which issues Order Type IDs).
    ///   - tokenKey: with it, a connection may come without a client certificate, and its pushes must
    ///     then carry a provider token this key signed (`authorization: bearer …`).
    public init(
        server: TestCertificate, clientCA: Certificate, tokenKey: TokenKey? = nil, logger: Logger = Logger(label: "orchard.mock-apns")
    ) throws {
        var tls = TLSConfiguration.makeServerConfigurationWithMTLS(
            certificateChain: [.certificate(try NIOSSLCertificate(bytes: Array(server.certificatePEM.utf8), format: .pem))],
            privateKey: .privateKey(try NIOSSLPrivateKey(bytes: Array(server.keyPEM.utf8), format: .pem)),
            trustRoots: .certificates([try NIOSSLCertificate(bytes: Array(clientCA.serializeAsPEM().pemString.utf8), format: .pem)]))
        tls.minimumTLSVersion = .tlsv12
        tls.applicationProtocols = ["h2", "http/1.1"]
        // A certificate, when one comes, must still chain to the CA.
        if tokenKey != nil { tls.certificateVerification = .optionalVerification }
        self.sslContext = try NIOSSLContext(configuration: tls)
        self.tokenKey = tokenKey
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
                certified(connection).flatMap { certified in
                    connection.configureHTTP2Pipeline(mode: .server) { stream in
                        stream.eventLoop.makeCompletedFuture {
                            try stream.pipeline.syncOperations.addHandler(HTTP2FramePayloadToHTTP1ServerCodec())
                            try stream.pipeline.syncOperations.addHandler(
                                MockAPNsHandler(apns: self, overHTTP2: true, certified: certified))
                        }
                    }.map { _ in }
                }
            },
            http1ChannelConfigurator: { [self] connection in
                certified(connection).flatMapThrowing { certified in
                    try connection.pipeline.syncOperations.configureHTTPServerPipeline(withErrorHandling: true)
                    try connection.pipeline.syncOperations.addHandler(MockAPNsHandler(apns: self, overHTTP2: false, certified: certified))
                }
            })
    }

    /// Whether the connection's client presented a certificate (verified against the CA by the handshake).
    private func certified(_ connection: any Channel) -> EventLoopFuture<Bool> {
        connection.pipeline.handler(type: NIOSSLServerHandler.self).map { $0.peerCertificate != nil }
    }

    /// Why a push without a client certificate is refused: nil when its provider token is this key's and fresh.
    func tokenRefusal(_ authorization: String?) -> String? {
        guard let tokenKey else { return "MissingProviderToken" }
        guard let authorization, authorization.hasPrefix("bearer ") else { return "MissingProviderToken" }
        let parts = authorization.dropFirst("bearer ".count).split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        guard parts.count == 3, let header = Self.json(parts[0]), let claims = Self.json(parts[1]),
            let signature = Self.base64URL(parts[2]), let ecdsa = try? P256.Signing.ECDSASignature(rawRepresentation: signature),
            tokenKey.key.isValidSignature(ecdsa, for: Array("\(parts[0]).\(parts[1])".utf8)),
            header["alg"] as? String == "ES256", header["kid"] as? String == tokenKey.keyId, claims["iss"] as? String == tokenKey.teamId,
            let issued = claims["iat"] as? Int, abs(Date().timeIntervalSince1970 - Double(issued)) < 3600
        else { return "InvalidProviderToken" }
        return nil
    }

    /// base64url without padding, decoded.
    public static func base64URL(_ text: String) -> [UInt8]? {
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        base64 += String(repeating: "=", count: (4 - base64.count % 4) % 4)
        return Data(base64Encoded: base64).map { Array($0) }
    }

    /// A JWT part's JSON object.
    public static func json(_ part: String) -> [String: Any]? {
        base64URL(part).flatMap { try? JSONSerialization.jsonObject(with: Data($0)) as? [String: Any] }
    }

    /// Records a push and says what APNs answers it: a status and its `reason`.
    func answer(_ push: Push) -> (status: HTTPResponseStatus, reason: String?) {
        let (answer, resumed) = state.withLock { state in
            state.pushes.append(push)
            let answer: (HTTPResponseStatus, String?)
            if push.authentication.hasPrefix("refused:") {
                answer = (.forbidden, String(push.authentication.dropFirst("refused:".count)))
            } else if state.failures > 0 {
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
    let certified: Bool
    var collector = RequestCollector(limit: 8192)

    init(apns: MockAPNs, overHTTP2: Bool, certified: Bool) {
        self.apns = apns
        self.overHTTP2 = overHTTP2
        self.certified = certified
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
                    body: String(decoding: body, as: UTF8.self), overHTTP2: overHTTP2,
                    authentication: authentication(head.headers.first(name: "authorization"))))
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

    /// `certificate`, `token`, or why neither holds (`refused:<reason>`).
    func authentication(_ authorization: String?) -> String {
        if certified { return "certificate" }
        if let refusal = apns.tokenRefusal(authorization) { return "refused:\(refusal)" }
        return "token"
    }
}
