import ApplePay
import Crypto
import Foundation
import Logging
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
import NIOTLS
import SwiftASN1
import Synchronization
import X509

/// A local stand-in for Apple's merchant-session gateway.
///
/// HTTPS on loopback that requires a client certificate issued by the test CA; answers
/// `POST /paymentservices/paymentSession` and `/paymentservices/startSession` with an
/// Apple-shaped session or error, injects faults on request, and counts connections,
/// TLS handshakes and requests (also served at `GET /_mock/stats`).
public final class MockAppleGateway: Sendable {
    public struct Configuration: Sendable {
        public var host: String
        /// 0 picks a free port.
        public var port: Int
        public var serverIdentity: TestCertificate
        /// The CA that client certificates must chain to.
        public var clientCA: Certificate
        public var merchants: [MockMerchant]
        public var faults: MockGatewayFaults

        public init(
            host: String = "127.0.0.1", port: Int = 0, serverIdentity: TestCertificate, clientCA: Certificate,
            merchants: [MockMerchant], faults: MockGatewayFaults = .none
        ) {
            self.host = host
            self.port = port
            self.serverIdentity = serverIdentity
            self.clientCA = clientCA
            self.merchants = merchants
            self.faults = faults
        }
    }

    /// Largest request body the mock reads.
    static let maximumBodyBytes = 64 * 1024

    public let stats = MockGatewayStats()
    let logger: Logger
    private let configuration: Configuration
    private let sslContext: NIOSSLContext
    private let sessionSigningKey = SymmetricKey(size: .bits256)
    let state: Mutex<State>
    /// Session answers kept back while a test holds them.
    let heldSessions = HeldAnswers()
    /// Unregistration calls kept back, neither applied nor answered, while a test holds them.
    let heldUnregistrations = HeldAnswers()
    /// Registration calls kept back, neither applied nor answered, while a test holds them.
    let heldRegistrations = HeldAnswers()
    /// The Merchant Token Management API's tokens, events and calls (MockAppleGateway+MerchantTokens.swift).
    let merchantTokens = MockMerchantTokens()
    let usage = MockUsageInformation()
    /// The test CA, which a loopback https notification URL's certificate must chain to.
    let notificationTrust: NIOSSLCertificate

    struct State {
        var faults: MockGatewayFaults
        var merchants: [MockMerchant]
        var partners: [String: MockPartnerMerchant] = [:]
        var registrationCalls: [ReceivedRegistrationCall] = []
        var received: [ReceivedSessionRequest] = []
        var issued: [[UInt8]] = []
    }
    private let channels = ChannelTracker()

    public init(configuration: Configuration, logger: Logger = Logger(label: "orchard.mock-gateway")) throws {
        self.configuration = configuration
        self.logger = logger
        let clientCA = try NIOSSLCertificate(bytes: Array(configuration.clientCA.serializeAsPEM().pemString.utf8), format: .pem)
        self.notificationTrust = clientCA
        var tls = TLSConfiguration.makeServerConfigurationWithMTLS(
            certificateChain: [
                .certificate(try NIOSSLCertificate(bytes: Array(configuration.serverIdentity.certificatePEM.utf8), format: .pem))
            ],
            privateKey: .privateKey(try NIOSSLPrivateKey(bytes: Array(configuration.serverIdentity.keyPEM.utf8), format: .pem)),
            trustRoots: .certificates([clientCA])
        )
        tls.minimumTLSVersion = .tlsv12
        self.sslContext = try NIOSSLContext(configuration: tls)
        self.state = Mutex(State(faults: configuration.faults, merchants: configuration.merchants))
    }

    /// The faults applied to session requests from now on.
    public var faults: MockGatewayFaults {
        get { state.withLock { $0.faults } }
        set { state.withLock { $0.faults = newValue } }
    }

    /// Merchants and their registered domains.
    public var merchants: [MockMerchant] {
        get { state.withLock { $0.merchants } }
        set { state.withLock { $0.merchants = newValue } }
    }

    /// Every session request received, oldest first.
    public var receivedSessionRequests: [ReceivedSessionRequest] {
        state.withLock { $0.received }
    }

    /// Every session body sent, oldest first, byte for byte.
    public var issuedSessions: [[UInt8]] {
        state.withLock { $0.issued }
    }

    /// Binds and starts serving; returns the port.
    @discardableResult
    public func start() async throws -> Int {
        let port = try await channels.listen(host: configuration.host, port: configuration.port) { [self] channel in
            try configure(channel)
        }
        logger.info("mock Apple gateway listening", metadata: ["url": "https://\(configuration.host):\(port)"])
        return port
    }

    /// The bound port (0 before ``start()``).
    public var port: Int { channels.port }

    /// Stops listening and closes every open connection.
    public func stop() async {
        await channels.closeAll()
    }

    private func configure(_ channel: any Channel) throws {
        stats.connectionsCount.add(1, ordering: .relaxed)
        let reset = ConnectionResetHandler()
        let ssl = NIOSSLServerHandler(context: sslContext)
        let sync = channel.pipeline.syncOperations
        try sync.addHandler(reset)
        try sync.addHandler(ssl)
        try sync.addHandler(HandshakeCounter(stats: stats))
        try sync.configureHTTPServerPipeline(withErrorHandling: true)
        try sync.addHandler(MockGatewayHandler(gateway: self, ssl: ssl, reset: reset))
    }

    // MARK: Answers (called on the channel's event loop)

    func record(_ request: ReceivedSessionRequest) {
        state.withLock { $0.received.append(request) }
    }

    func currentFaultsAndMerchants() -> (MockGatewayFaults, [MockMerchant], [String: MockPartnerMerchant]) {
        state.withLock { ($0.faults, $0.merchants, $0.partners) }
    }

    /// Runs one registration API call against the partner registry: Apple's status and body.
    func registration(_ call: ReceivedRegistrationCall) -> (status: Int, body: [UInt8]) {
        state.withLock { state in
            state.registrationCalls.append(call)
            let rejection: MockSessionRules.Rejection?
            switch (call.method, call.path) {
            case ("POST", "/paymentservices/registerMerchant"):
                rejection = MockRegistrationRules.register(
                    body: call.body, clientMerchantHash: call.clientMerchantHash, merchants: state.merchants, partners: &state.partners)
            case ("POST", "/paymentservices/unregisterMerchant"):
                rejection = MockRegistrationRules.unregister(
                    body: call.body, clientMerchantHash: call.clientMerchantHash, merchants: state.merchants, partners: &state.partners)
            default:
                let encoded = String(call.path.dropFirst("/paymentservices/merchant/".count))
                switch MockRegistrationRules.details(
                    identifier: encoded.removingPercentEncoding ?? encoded, clientMerchantHash: call.clientMerchantHash,
                    merchants: state.merchants, partners: state.partners)
                {
                case .success(let body): return (200, body)
                case .failure(let failure): rejection = failure
                }
            }
            guard let rejection else { return (200, []) }
            return (rejection.status, Self.appleError(status: rejection.status, message: rejection.message))
        }
    }

    /// An Apple-shaped merchant session: opaque to Orchard, passed on to the page unchanged.
    ///
    /// Written by hand rather than with JSONSerialization: the mock sits in the benchmark's
    /// hot path, and its own cost should not hide Orchard's.
    func makeSession(merchantIdentifier: String, domain: String, displayName: String) -> [UInt8] {
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        let hash = MerchantIdentifierExtension.hash(of: merchantIdentifier)
        var generator = SystemRandomNumberGenerator()
        let nonce = hex((0..<4).map { _ in UInt8.random(in: 0...255, using: &generator) })
        let sessionID = hex((0..<32).map { _ in UInt8.random(in: 0...255, using: &generator) })
        let fields: [(String, String)] = [
            ("displayName", json(displayName)),
            ("domainName", json(domain)),
            ("epochTimestamp", String(now)),
            ("expiresAt", String(now + 3_600_000)),
            ("merchantIdentifier", json(hash)),
            ("merchantSessionIdentifier", json("SSH" + sessionID)),
            ("nonce", json(nonce)),
            ("operationalAnalyticsIdentifier", json("\(displayName):\(hash)")),
            ("pspId", json(hash)),
            ("retries", "0"),
        ]
        let signed = fields.map { "\(json($0.0)):\($0.1)" }.joined(separator: ",")
        let signature = Data(HMAC<SHA256>.authenticationCode(for: Array(signed.utf8), using: sessionSigningKey)).base64EncodedString()
        let body = Array("{\(signed),\"signature\":\(json(signature))}".utf8)
        stats.sessionsCount.add(1, ordering: .relaxed)
        state.withLock { $0.issued.append(body) }
        return body
    }

    static func appleError(status: Int, message: String) -> [UInt8] {
        Array("{\"statusCode\":\(json(String(status))),\"statusMessage\":\(json(message))}".utf8)
    }
}

/// Reads one request at a time and answers it.
final class MockGatewayHandler: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    private let gateway: MockAppleGateway
    private let ssl: NIOSSLServerHandler
    private let reset: ConnectionResetHandler
    private var collector = RequestCollector(limit: MockAppleGateway.maximumBodyBytes)
    private var body: [UInt8] = []
    private var tooLarge = false
    /// The client certificate's merchant-ID hash, read once per connection.
    private lazy var clientHash: String? = clientMerchantHash()

    init(gateway: MockAppleGateway, ssl: NIOSSLServerHandler, reset: ConnectionResetHandler) {
        self.gateway = gateway
        self.ssl = ssl
        self.reset = reset
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard let request = collector.consume(unwrapInboundIn(data)) else { return }
        body = request.body
        tooLarge = request.tooLarge
        gateway.stats.requestsCount.add(1, ordering: .relaxed)
        handle(request.head, context: context)
    }

    private func handle(_ head: HTTPRequestHead, context: ChannelHandlerContext) {
        let path = String(head.uri.split(separator: "?", maxSplits: 1).first ?? "")
        if tooLarge {
            return respond(413, MockAppleGateway.appleError(status: 413, message: "Request Entity Too Large"), head, context)
        }
        switch (head.method, path) {
        case (.GET, "/_mock/stats"):
            let json = (try? JSONEncoder().encode(gateway.stats.snapshot)) ?? Data()
            respond(200, Array(json), head, context)
        case (.POST, MockAppleGateway.tokenEventsControlPath):
            gateway.tokenEventControl(body: body, on: context.eventLoop).assumeIsolated().whenSuccess {
                self.respond($0.status, $0.body, head, context)
            }
        case (.GET, _) where path.hasPrefix(MockAppleGateway.usageControlPrefix),
            (.POST, _) where path.hasPrefix(MockAppleGateway.usageControlPrefix):
            let answer = gateway.usageControl(method: head.method.rawValue, path: path, body: body)
            respond(answer.status, answer.body, head, context)
        case (.POST, "/paymentservices/paymentSession"), (.POST, "/paymentservices/startSession"):
            session(path: path, head: head, context: context)
        case (.POST, "/paymentservices/registerMerchant"), (.POST, "/paymentservices/unregisterMerchant"):
            let call = ReceivedRegistrationCall(method: "POST", path: path, body: body, clientMerchantHash: clientHash)
            let loop = context.eventLoop
            let apply = NIOLoopBound(
                {
                    let answer = self.gateway.registration(call)
                    self.respond(answer.status, answer.body, head, context)
                }, eventLoop: loop)
            let held = path.hasSuffix("unregisterMerchant") ? gateway.heldUnregistrations : gateway.heldRegistrations
            if held.keep({ loop.execute { apply.value() } }) { return }
            apply.value()
        case (_, _) where path.hasPrefix(MockAppleGateway.merchantTokenPrefix) && gateway.merchantTokenCallsReset:
            gateway.logger.debug("fault: resetting a merchant token call's connection")
            reset.reset()
        case (_, _) where path.hasPrefix(MockAppleGateway.merchantTokenPrefix):
            let answer = gateway.merchantTokenCall(
                method: head.method.rawValue, path: path, headers: head.headers, body: body, clientMerchantHash: clientHash)
            respond(answer.status, answer.body, head, context)
        case (.GET, _) where path.hasPrefix("/paymentservices/merchant/") && path.count > "/paymentservices/merchant/".count:
            let answer = gateway.registration(
                ReceivedRegistrationCall(method: "GET", path: path, body: [], clientMerchantHash: clientHash))
            respond(answer.status, answer.body, head, context)
        default:
            respond(404, MockAppleGateway.appleError(status: 404, message: "Not Found"), head, context)
        }
    }

    private func session(path: String, head: HTTPRequestHead, context: ChannelHandlerContext) {
        let (faults, merchants, partners) = gateway.currentFaultsAndMerchants()
        if faults.resetConnection {
            gateway.logger.debug("fault: resetting connection")
            reset.reset()
            return
        }
        let status: Int
        let answer: [UInt8]
        switch MockSessionRules.validate(
            path: path, body: body, clientMerchantHash: clientHash, merchants: merchants, partners: partners)
        {
        case .success(let valid):
            gateway.record(ReceivedSessionRequest(path: path, fields: valid.fields, clientMerchantHash: clientHash))
            if let forced = faults.status {
                status = forced
                answer = MockAppleGateway.appleError(status: forced, message: "Injected fault \(forced)")
            } else {
                status = 200
                answer = gateway.makeSession(merchantIdentifier: valid.merchant, domain: valid.domain, displayName: valid.displayName)
            }
        case .failure(let rejection):
            gateway.logger.debug(
                "rejecting session request", metadata: ["status": "\(rejection.status)", "message": "\(rejection.message)"])
            status = rejection.status
            answer = MockAppleGateway.appleError(status: rejection.status, message: rejection.message)
        }
        let loop = context.eventLoop
        let send = NIOLoopBound({ self.respond(status, answer, head, context, slowBody: faults.slowBody) }, eventLoop: loop)
        if gateway.heldSessions.keep({ loop.execute { send.value() } }) { return }
        if faults.latency > .zero {
            context.eventLoop.assumeIsolated().scheduleTask(in: TimeAmount(faults.latency)) {
                self.respond(status, answer, head, context, slowBody: faults.slowBody)
            }
        } else {
            respond(status, answer, head, context, slowBody: faults.slowBody)
        }
    }

    private func clientMerchantHash() -> String? {
        guard let peer = ssl.peerCertificate, let der = try? peer.toDERBytes(),
            let certificate = try? Certificate(derEncoded: der)
        else { return nil }
        return MerchantIdentifierExtension.value(in: certificate)
    }

    private func respond(
        _ status: Int, _ body: [UInt8], _ request: HTTPRequestHead, _ context: ChannelHandlerContext,
        slowBody: Duration? = nil
    ) {
        guard context.channel.isActive else { return }
        var headers = HTTPHeaders()
        // A 204 (a merchant token unlinked) carries neither.
        if status != 204 {
            headers.add(name: "Content-Type", value: "application/json")
            headers.add(name: "Content-Length", value: String(body.count))
        }
        let keepAlive = request.isKeepAlive
        if !keepAlive { headers.add(name: "Connection", value: "close") }
        let head = HTTPResponseHead(version: request.version, status: HTTPResponseStatus(statusCode: status), headers: headers)
        context.write(wrapOutboundOut(.head(head)), promise: nil)

        let finish: (ChannelHandlerContext, ArraySlice<UInt8>) -> Void = { context, rest in
            if !rest.isEmpty {
                context.write(self.wrapOutboundOut(.body(.byteBuffer(context.channel.allocator.buffer(bytes: rest)))), promise: nil)
            }
            let done = context.writeAndFlush(self.wrapOutboundOut(.end(nil)))
            if !keepAlive {
                done.assumeIsolated().whenComplete { _ in context.close(promise: nil) }
            }
        }
        if let slowBody, body.count > 1 {
            let half = body.count / 2
            context.writeAndFlush(wrapOutboundOut(.body(.byteBuffer(context.channel.allocator.buffer(bytes: body[..<half])))), promise: nil)
            context.eventLoop.assumeIsolated().scheduleTask(in: TimeAmount(slowBody)) {
                guard context.channel.isActive else { return }
                finish(context, body[half...])
            }
        } else {
            finish(context, body[...])
        }
    }
}
