import ApplePay
import Crypto
import Foundation
import Logging
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
import Synchronization

/// How the mock processors answer the next authorization requests.
public enum MockProcessorBehaviour: Sendable, Equatable {
    case authorize
    case refuse(code: String, description: String)
    /// Answer with this HTTP status and an error body (5xx: the outcome is unknown to the caller).
    case status(Int)
    /// Authorize, but answer only after this long.
    case delay(Duration)
    /// Authorize, but never answer: the charge stays in progress (a retry is told so, a query
    /// sees it requested) until ``MockProcessors/finishHeldCharges()``. A slow charge whose end
    /// the test chooses, instead of one it waits out.
    case hold
    /// Authorize, and answer only when the test calls ``MockProcessors/releaseAwaitedAnswers()``:
    /// the caller waits on its request meanwhile (within its timeout), as on a slow processor,
    /// while the test does what must happen before the answer arrives.
    case awaitRelease
    /// Record the authorization, then reset the connection without answering.
    case dropAfterCharge
    /// Record the authorization, then answer with this status and a body that is not JSON
    /// (a proxy's error page, a truncated answer).
    case unreadableAfterCharge(status: Int)
    /// Worldline: take the payment and answer CreatePayment with this status (and its
    /// `statusOutput`); GetPayment answers it too until ``MockProcessors/setWorldlineStatus(_:ofPayment:)``.
    case worldlineStatus(MockWorldlineStatus)
}

/// A Worldpay Access account the mock accepts.
public struct MockWorldpayAccount: Sendable {
    public var entity: String
    public var username: String
    public var password: String

    public init(entity: String, username: String, password: String) {
        self.entity = entity
        self.username = username
        self.password = password
    }
}

/// A Worldline Direct account the mock accepts.
public struct MockWorldlineAccount: Sendable {
    public var merchantId: String
    public var apiKeyId: String
    public var secretApiKey: String

    public init(merchantId: String, apiKeyId: String, secretApiKey: String) {
        self.merchantId = merchantId
        self.apiKeyId = apiKeyId
        self.secretApiKey = secretApiKey
    }
}

/// A payment the mock has taken: one per idempotency reference, whatever the retries.
public struct MockCharge: Sendable, Equatable {
    /// `pending`: taken without an outcome yet (a Worldline redirect, an authorization requested).
    public enum State: String, Sendable { case authorized, refused, settled, cancelled, pending }
    public var processor: String
    public var reference: String
    public var id: String
    public var amount: Int64
    public var currency: String
    public var state: State
    /// Worldline: `encrypted` or `decrypted`; Worldpay: `walletToken`; a merchant-initiated charge of either: `token`.
    public var mode: String
    /// When it was taken and settled, on the mock's ``MockProcessors/clock``: what the payment queries' lag counts from.
    public var takenAt: Date = .distantPast
    public var settledAt: Date?
}

/// A request the mock received.
public struct MockProcessorRequest: Sendable {
    public var method: String
    public var path: String
    public var headers: [(name: String, value: String)]
    public var body: [UInt8]
    /// The query string's parameters, percent-decoded.
    public var query: [String: String] = [:]

    public func header(_ name: String) -> String? {
        headers.first { $0.name.lowercased() == name.lowercased() }?.value
    }
}

/// Stand-ins for Worldpay Access and Worldline Direct on one loopback HTTPS port. They check
/// what the real APIs check (Basic credentials or the v1HMAC signature and its date, media
/// types, required fields, integer minor-unit amounts, ISO currency codes), keep payments
/// idempotent by reference, and answer as told by ``behaviour``.
public final class MockProcessors: Sendable {
    public let worldpay: MockWorldpayAccount
    public let worldline: MockWorldlineAccount
    let logger: Logger
    private let sslContext: NIOSSLContext
    private let host: String
    private let requestedPort: Int
    let state: Mutex<State>

    struct State {
        var behaviour: MockProcessorBehaviour = .authorize
        /// Behaviours for the next authorization requests, one each, before ``behaviour`` again.
        var upcoming: [MockProcessorBehaviour] = []
        var charges: [MockCharge] = []
        var answers: [String: (status: Int, body: [UInt8])] = [:]
        /// References whose (slow) charge is still being processed, until when.
        var inProgress: [String: ContinuousClock.Instant] = [:]
        /// References of held charges, in progress until the test finishes them.
        var held: Set<String> = []
        /// The answers ``MockProcessorBehaviour/awaitRelease`` keeps back, each sending its own.
        var awaiting: [@Sendable () -> Void] = []
        var received: [MockProcessorRequest] = []
        var refundBehaviour: MockRefundBehaviour = .accept
        var refunds: [MockRefund] = []
        /// Tokens issued by first payments that asked for them, deleted ones included.
        var tokens: [MockStoredToken] = []
        var mandateCharges: [MockMandateCharge] = []
        var deletedTokens: [String] = []
        var withholdsTokens = false
        /// Processing keys the mock holds as their processor (see ``MockProcessors/heldKeys``).
        var heldKeys: [ProcessingKey] = []
        /// What the mock decrypted with them, oldest first.
        var decrypted: [DecryptedPayment] = []
        /// The mock's "now" for what the payment queries show (tests move it instead of sleeping).
        var clock: TimeSource = .system
        /// How long after a payment or refund Worldpay's Payment Queries and payment events show it.
        var paymentQueriesLag: TimeInterval = 0
        var paymentEventsLag: TimeInterval = 0
        /// Worldline payments' statuses, by payment ID, as GetPayment answers them.
        var worldlineStatuses: [String: MockWorldlineStatus] = [:]
    }
    private let channels = ChannelTracker()

    public init(
        serverIdentity: TestCertificate, worldpay: MockWorldpayAccount, worldline: MockWorldlineAccount, host: String = "127.0.0.1",
        port: Int = 0, logger: Logger = Logger(label: "orchard.mock-processors")
    ) throws {
        self.worldpay = worldpay
        self.worldline = worldline
        self.host = host
        self.requestedPort = port
        self.logger = logger
        var tls = TLSConfiguration.makeServerConfiguration(
            certificateChain: [.certificate(try NIOSSLCertificate(bytes: Array(serverIdentity.certificatePEM.utf8), format: .pem))],
            privateKey: .privateKey(try NIOSSLPrivateKey(bytes: Array(serverIdentity.keyPEM.utf8), format: .pem)))
        tls.minimumTLSVersion = .tlsv12
        sslContext = try NIOSSLContext(configuration: tls)
        state = Mutex(State())
    }

    /// How the next authorizations are answered.
    public var behaviour: MockProcessorBehaviour {
        get { state.withLock { $0.behaviour } }
        set { state.withLock { $0.behaviour = newValue } }
    }

    /// Every payment taken, oldest first.
    public var charges: [MockCharge] { state.withLock { $0.charges } }

    /// Whether a slow charge under `reference` (Worldpay's `transactionReference`, Worldline's
    /// idempotence key) is still being processed: what an operator sees as "in progress".
    public func isInProgress(_ reference: String) -> Bool {
        state.withLock { state in
            ["worldpay:", "worldline:"].contains { state.inProgress[$0 + reference].map { $0 > .now } ?? false }
        }
    }

    /// Ends every held charge (``MockProcessorBehaviour/hold``): from now on its reference is
    /// answered with the charge's outcome, as after a slow charge.
    public func finishHeldCharges() {
        state.withLock { state in
            for reference in state.held { state.inProgress[reference] = nil }
            state.held = []
        }
    }

    /// Every request received, oldest first.
    public var received: [MockProcessorRequest] { state.withLock { $0.received } }

    public var port: Int { channels.port }
    public var baseURL: String { "https://\(host):\(port)" }

    @discardableResult
    public func start() async throws -> Int {
        let port = try await channels.listen(host: host, port: requestedPort) { [self] channel in
            let reset = ConnectionResetHandler()
            let sync = channel.pipeline.syncOperations
            try sync.addHandler(reset)
            try sync.addHandler(NIOSSLServerHandler(context: sslContext))
            try sync.configureHTTPServerPipeline(withErrorHandling: true)
            try sync.addHandler(MockProcessorHandler(mock: self, reset: reset))
        }
        logger.info("mock processors listening", metadata: ["url": "https://\(host):\(port)"])
        return port
    }

    public func stop() async {
        await channels.closeAll()
    }

    // MARK: Answers

    /// What to do with one request: answer, or drop the connection.
    enum Reply {
        case answer(status: Int, body: [UInt8], headers: [(String, String)])
        case drop
        case delayed(Duration, status: Int, body: [UInt8])
        /// No answer: the caller's timeout ends the request.
        case unanswered
        /// This answer, once the test releases it (``MockProcessors/releaseAwaitedAnswers()``).
        case awaiting(status: Int, body: [UInt8])
    }

    func handle(_ request: MockProcessorRequest) -> Reply {
        // A test reading the mock is no processor traffic: ``received`` leaves it out.
        if let control = controlRoute(request) { return control }
        state.withLock { $0.received.append(request) }
        let path = request.path
        if let refund = refundRoute(request) { return refund }
        if let mandate = mandateRoute(request) { return mandate }
        if let query = queryRoute(request) { return query }
        if path == "/cardPayments/customerInitiatedTransactions" && request.method == "POST" { return worldpayAuthorize(request) }
        if path.hasPrefix("/payments/settlements/full/") || path.hasPrefix("/payments/authorizations/cancellations/") {
            return worldpayAction(request)
        }
        let prefix = "/v2/\(worldline.merchantId)/payments"
        if path == prefix && request.method == "POST" { return worldlineCreate(request) }
        if path.hasPrefix(prefix + "/") && request.method == "POST" { return worldlineAction(request, prefix: prefix) }
        if path.hasPrefix("/v2/") {
            return Self.reply(404, ["errorId": UUID().uuidString, "errors": [["code": "9007", "message": "UNKNOWN_MERCHANT"]]])
        }
        return Self.reply(404, ["errorName": "urlNotFound", "message": "no such resource"])
    }

    static func reply(_ status: Int, _ object: [String: Any], headers: [(String, String)] = []) -> Reply {
        .answer(status: status, body: body(object), headers: headers)
    }

    static func body(_ object: [String: Any]) -> [UInt8] {
        Array((try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes])) ?? Data())
    }

    /// An integer JSON number (not a bool, not a fraction).
    static func integer(_ value: Any?) -> Int64? {
        // JSON true/false arrive as NSNumber too, with the C type "c".
        guard let number = value as? NSNumber, String(cString: number.objCType) != "c" else { return nil }
        let double = number.doubleValue
        guard double == double.rounded(), double >= 0, double < 1e15 else { return nil }
        return number.int64Value
    }

    static func isCurrency(_ value: Any?) -> Bool {
        guard let code = value as? String else { return false }
        return code.utf8.count == 3 && code.utf8.allSatisfy { $0 >= 0x41 && $0 <= 0x5A }
    }

    /// How a processor answers a reference whose first request is still being processed.
    struct InProgressAnswer {
        var status: Int
        var body: [UInt8]
    }

    /// Runs one authorization under the current behaviour, as the processors keep idempotency: a
    /// reference still being processed gets `inProgress`; a known one gets its first answer again.
    /// `declined` refuses a new charge whatever the behaviour (a deleted token); `taken` runs, in
    /// the lock, once a new charge is recorded (a token issued only if it was authorized).
    func authorization(
        reference: String, charge: MockCharge, authorized: [UInt8], authorizedStatus: Int, refused: (String, String) -> (Int, [UInt8]),
        errorBody: (Int) -> [UInt8], inProgress: InProgressAnswer, replayHeaders: [(String, String)],
        declined: (code: String, description: String)? = nil, taken onTaken: (inout State, MockCharge) -> Void = { _, _ in }
    ) -> Reply {
        // A queued fault is used up by the first request that reaches it, a retry's included.
        let behaviour = state.withLock { $0.upcoming.isEmpty ? $0.behaviour : $0.upcoming.removeFirst() }
        if case .status(let status) = behaviour { return .answer(status: status, body: errorBody(status), headers: []) }
        if state.withLock({ $0.inProgress[reference].map { $0 > .now } ?? false }) {
            return .answer(status: inProgress.status, body: inProgress.body, headers: [])
        }
        let outcome: (status: Int, body: [UInt8], replayed: Bool) = state.withLock { state in
            if let previous = state.answers[reference] { return (previous.status, previous.body, true) }
            if case .delay(let duration) = behaviour { state.inProgress[reference] = .now + duration }
            if behaviour == .hold {
                state.inProgress[reference] = .now + .seconds(86_400)
                state.held.insert(reference)
            }
            var taken = charge
            taken.takenAt = state.clock.now
            let answer: (Int, [UInt8])
            if let declined {
                taken.state = .refused
                answer = refused(declined.code, declined.description)
            } else if case .refuse(let code, let description) = behaviour {
                taken.state = .refused
                answer = refused(code, description)
            } else {
                answer = (authorizedStatus, authorized)
            }
            state.charges.append(taken)
            onTaken(&state, taken)
            state.answers[reference] = answer
            return (answer.0, answer.1, false)
        }
        switch behaviour {
        case .dropAfterCharge: return .drop
        case .unreadableAfterCharge(let status):
            return .answer(status: status, body: Array("<html><body>Bad gateway</body></html>".utf8), headers: [])
        case .delay(let duration): return .delayed(duration, status: outcome.status, body: outcome.body)
        case .hold: return .unanswered
        case .awaitRelease: return .awaiting(status: outcome.status, body: outcome.body)
        default: return .answer(status: outcome.status, body: outcome.body, headers: outcome.replayed ? replayHeaders : [])
        }
    }
}

/// Reads a request, asks ``MockProcessors`` and answers, delays or drops the connection.
final class MockProcessorHandler: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    let mock: MockProcessors
    let reset: ConnectionResetHandler
    private var collector = RequestCollector(limit: 256 * 1024)

    init(mock: MockProcessors, reset: ConnectionResetHandler) {
        self.mock = mock
        self.reset = reset
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard let (head, body, tooLarge) = collector.consume(unwrapInboundIn(data)) else { return }
        guard !tooLarge else { return respond(413, MockProcessors.body(["message": "the body is too large"]), [], head, context) }
        let components = URLComponents(string: head.uri)
        let query = (components?.queryItems ?? []).reduce(into: [String: String]()) { $0[$1.name] = $1.value ?? "" }
        let request = MockProcessorRequest(
            method: head.method.rawValue, path: String(head.uri.split(separator: "?").first ?? ""),
            headers: head.headers.map { (name: $0.name, value: $0.value) }, body: body, query: query)
        switch mock.handle(request) {
        case .answer(let status, let body, let headers):
            respond(status, body, headers, head, context)
        case .drop:
            reset.reset()
        case .unanswered:
            break
        case .delayed(let duration, let status, let body):
            context.eventLoop.assumeIsolated().scheduleTask(in: TimeAmount(duration)) {
                self.respond(status, body, [], head, context)
            }
        case .awaiting(let status, let body):
            let loop = context.eventLoop
            let bound = NIOLoopBound((handler: self, context: context), eventLoop: loop)
            mock.keepBack {
                loop.execute { bound.value.handler.respond(status, body, [], head, bound.value.context) }
            }
        }
    }

    private func respond(
        _ status: Int, _ body: [UInt8], _ extra: [(String, String)], _ request: HTTPRequestHead, _ context: ChannelHandlerContext
    ) {
        guard context.channel.isActive else { return }
        var headers = HTTPHeaders()
        headers.add(name: "Content-Type", value: "application/json")
        headers.add(name: "Content-Length", value: String(body.count))
        for (name, value) in extra { headers.add(name: name, value: value) }
        context.write(
            wrapOutboundOut(.head(HTTPResponseHead(version: request.version, status: .init(statusCode: status), headers: headers))),
            promise: nil)
        context.write(wrapOutboundOut(.body(.byteBuffer(context.channel.allocator.buffer(bytes: body)))), promise: nil)
        context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
    }
}
