import ApplePay
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
    /// Worldline: `encrypted` or `decrypted`; Worldpay: `walletToken` (Apple Pay's or Google Pay's wallet token),
    /// `networkToken` or `card` (a Google Pay token Orchard decrypted); a merchant-initiated charge of either: `token`.
    public var mode: String
    /// When it was taken and settled, on the mock's ``MockProcessors/clock``: what the payment queries' lag counts from.
    public var takenAt: Date = .distantPast
    public var settledAt: Date?
    /// What a partial capture took (Worldpay's `partialSettle`, Worldline's capture `amount`);
    /// nil for a settle of the whole amount.
    public var capturedAmount: Int64?
    /// Worldpay: the partial settlement's `reference`; Worldline: the capture's `isFinal`.
    public var captureReference: String?
    public var captureFinal: Bool?
    /// The rest of a partly captured authorization was released (Worldpay: the cancel after it;
    /// Worldline: a final capture).
    public var restReleased = false

    /// What the settlement took: the partial capture's amount, else the whole amount.
    public var settledAmount: Int64 { capturedAmount ?? amount }
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

/// Stand-ins for the processors on one loopback HTTPS port: the listener, TLS, the test's
/// controls and what every processor shares (the payments, refunds and tokens taken, the
/// behaviour, the clock). Each processor's API is its own ``MockProcessorAPI`` (in its own
/// folder: `MockWorldpay/`, `MockWorldline/`), which checks what the real API checks and answers
/// in its shapes; the listener asks them in turn. Payments are idempotent by reference and
/// answered as told by ``behaviour``.
public final class MockProcessors: Sendable {
    public let worldpay: MockWorldpayAccount
    public let worldline: MockWorldlineAccount
    /// The processor mocks the listener asks, in order (``registered(worldpay:worldline:)``).
    let processors: [any MockProcessorAPI]
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
        /// The Google Pay gateway the mock plays (see ``MockProcessors/googlePayGateway``).
        var googlePayGateway: MockGooglePayGateway?
        /// Every Google Pay payment request received, oldest first.
        var googlePayPayments: [MockGooglePayPayment] = []
        /// The mock's "now" for what the payment queries show (tests move it instead of sleeping).
        var clock: TimeSource = .system
    }
    private let channels = ChannelTracker()

    public init(
        serverIdentity: TestCertificate, worldpay: MockWorldpayAccount, worldline: MockWorldlineAccount, host: String = "127.0.0.1",
        port: Int = 0, logger: Logger = Logger(label: "orchard.mock-processors")
    ) throws {
        self.worldpay = worldpay
        self.worldline = worldline
        self.processors = Self.registered(worldpay: worldpay, worldline: worldline)
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

    /// Every processor mock the listener serves, in the order it asks them: adding a processor
    /// is its folder and a line here.
    static func registered(worldpay: MockWorldpayAccount, worldline: MockWorldlineAccount) -> [any MockProcessorAPI] {
        [MockWorldpay(account: worldpay), MockWorldline(account: worldline)]
    }

    /// The registered mock of type `P` (its own state and controls).
    func processor<P: MockProcessorAPI>(_ type: P.Type) -> P? {
        processors.lazy.compactMap { $0 as? P }.first
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
            processors.contains { state.inProgress[$0.name + ":" + reference].map { $0 > .now } ?? false }
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

    /// The mock's "now" for the queries' lag and what payments and refunds are stamped with; the
    /// system clock unless a test sets its own.
    public var clock: TimeSource {
        get { state.withLock { $0.clock } }
        set { state.withLock { $0.clock = newValue } }
    }

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

    typealias Reply = MockProcessorReply

    /// Records the request and asks each processor mock in turn; the first that knows the path answers.
    func handle(_ request: MockProcessorRequest) -> Reply {
        // A test reading the mock is no processor traffic: ``received`` leaves it out.
        if let control = controlRoute(request) { return control }
        state.withLock { $0.received.append(request) }
        for processor in processors {
            if let reply = processor.handle(request, mock: self) { return reply }
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
