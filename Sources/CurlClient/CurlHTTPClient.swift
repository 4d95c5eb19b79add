import CCurlShims
import Synchronization

/// An HTTP request for ``CurlHTTPClient``.
public struct CurlRequest: Sendable {
    public var method: String
    public var url: String
    public var headers: [(name: String, value: String)]
    public var body: [UInt8]?
    /// The client certificate presented for mutual TLS, if any.
    public var identity: TLSIdentity?
    public var trust: TLSTrust
    /// Overrides the client's default timeouts for this request.
    public var timeouts: CurlTimeouts?
    /// Opens a new connection for this request. libcurl silently sends a request again when a
    /// reused connection turns out dead before any answer, which may be after the server acted
    /// on it; a fresh connection is never retried that way, so a call that must not be
    /// repeated without an idempotency key asks for one.
    public var freshConnection = false
    /// A group this request counts in besides its origin (an Apple merchant identity, say), limited
    /// by ``CurlHTTPClient/Configuration/maxConcurrentPerGroup``; nil: its origin only.
    public var concurrencyGroup: String?
    /// Connects elsewhere for the URL's host and port (a libcurl CURLOPT_CONNECT_TO entry,
    /// `host:port:connect-host:connect-port`), while TLS (SNI, the certificate's name check) and
    /// the Host header keep the URL's host: a server DNS does not point at yet, or a test host.
    public var connectTo: String?
    /// Reads the certificates the server presents in its TLS handshake into
    /// ``CurlResponse/peerCertificates`` (CURLOPT_CERTINFO). Such a request opens a new connection,
    /// resumes no TLS session and leaves its connection unused afterwards, so what it reads is what
    /// the server presents now, not what an earlier handshake saw; other requests pay nothing.
    public var readsPeerCertificates = false
    /// Runs the call in a trace of its own, linked to the current span but never carrying its
    /// IDs: for a call to a shop or tenant, who should not learn the trace (the operator's, or a
    /// proxy's upstream) of the request that made it. Without it, the call continues the current trace.
    public var startsTrace = false
    /// Asks for HTTP/2 (ALPN `h2`), as APNs requires; ``CurlResponse/httpVersion`` says what the
    /// server spoke, for a caller that must refuse anything else.
    public var requiresHTTP2 = false

    public init(
        method: String = "GET",
        url: String,
        headers: [(name: String, value: String)] = [],
        body: [UInt8]? = nil,
        identity: TLSIdentity? = nil,
        trust: TLSTrust = .system,
        timeouts: CurlTimeouts? = nil
    ) {
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
        self.identity = identity
        self.trust = trust
        self.timeouts = timeouts
    }
}

/// Connect and total timeouts. The total is capped below Safari's 30-second deadline.
public struct CurlTimeouts: Sendable, Equatable {
    /// The longest total timeout the client accepts: a shopper's Apple Pay sheet gives up at 30 s.
    public static let maximumTotal: Duration = .seconds(29)

    public var connect: Duration
    public var total: Duration

    public init(connect: Duration = .seconds(3), total: Duration = .seconds(10)) {
        self.connect = connect
        self.total = total
    }
}

/// A response: status, headers and the body bytes exactly as received.
public struct CurlResponse: Sendable {
    public var status: Int
    public var headers: [(name: String, value: String)]
    public var body: [UInt8]
    /// How many new connections this transfer opened (0 when it reused one).
    public var newConnections: Int
    /// The certificates the server presented in the TLS handshake, in its order (its own first), each
    /// as PEM; empty unless the request asked (``CurlRequest/readsPeerCertificates``) or over plain http.
    public var peerCertificates: [String] = []
    /// The HTTP version the answer came in: 1 (1.0 or 1.1), 2 or 3; 0 when answered in process.
    public var httpVersion = 0

    /// A response as received (or, in tests that answer in process, as a server would have sent it).
    public init(
        status: Int, headers: [(name: String, value: String)], body: [UInt8], newConnections: Int = 0, peerCertificates: [String] = []
    ) {
        self.status = status
        self.headers = headers
        self.body = body
        self.newConnections = newConnections
        self.peerCertificates = peerCertificates
    }

    /// The first header with this name, compared case-insensitively.
    public func header(_ name: String) -> String? {
        let lowered = name.lowercased()
        return headers.first { $0.name.lowercased() == lowered }?.value
    }
}

/// An async HTTPS client built on libcurl.
///
/// One multi handle, driven by one dedicated thread, runs every transfer: connections and
/// TLS sessions are reused across requests, and no Swift concurrency thread ever blocks on
/// the network. Create one client per process and share it.
public final class CurlHTTPClient: Sendable {
    /// Client-wide settings.
    public struct Configuration: Sendable {
        public var timeouts: CurlTimeouts
        /// Responses larger than this fail with ``CurlError/Kind/responseTooLarge``.
        public var maxResponseBytes: Int
        /// Schemes libcurl may use; `https` only unless a test or a processor sandbox needs `http`.
        public var allowedSchemes: [String]
        /// The largest number of idle connections kept for reuse.
        public var maxCachedConnections: Int
        /// The most requests in flight at once; one more fails at once with ``CurlError/Kind/busy``.
        public var maxTransfers: Int
        /// The most requests in flight to one origin (scheme, host and port), and the most
        /// connections libcurl opens to one host.
        public var maxConcurrentPerHost: Int
        /// The most requests in flight in one ``CurlRequest/concurrencyGroup``.
        public var maxConcurrentPerGroup: Int
        /// The proxy every request goes through (`http://`, `https://` or `socks5h://`); nil: none.
        /// libcurl's own reading of `http_proxy`, `HTTPS_PROXY`, `ALL_PROXY` and `NO_PROXY` is
        /// always off: a proxy is used only when it is configured here.
        public var proxy: String?
        /// When set, every connection this client opens goes only to addresses the check allows,
        /// judged on each address the host resolved to as the socket is opened (libcurl's
        /// open-socket callback), so a refused one is never connected to; connections are reused
        /// only within this client. With a ``proxy``, which would resolve names itself, the client
        /// first looks the host up without connecting, and has the proxy connect to the first
        /// address the check allows (CURLOPT_CONNECT_TO; TLS still checks the URL's host).
        /// Every address refused: ``CurlError/Kind/refusedDestination``.
        public var destinationCheck: CurlDestinationCheck?
        /// Names this client answers without DNS, as libcurl's CURLOPT_RESOLVE entries
        /// (`host:port:address`): tests use it to make a name resolve to loopback.
        public var resolve: [String]

        public init(
            timeouts: CurlTimeouts = CurlTimeouts(),
            maxResponseBytes: Int = 1 << 20,
            allowedSchemes: [String] = ["https"],
            maxCachedConnections: Int = 128,
            maxTransfers: Int = 256,
            maxConcurrentPerHost: Int = 64,
            maxConcurrentPerGroup: Int = 16,
            proxy: String? = nil,
            destinationCheck: CurlDestinationCheck? = nil,
            resolve: [String] = []
        ) {
            self.timeouts = timeouts
            self.maxResponseBytes = maxResponseBytes
            self.allowedSchemes = allowedSchemes
            self.maxCachedConnections = maxCachedConnections
            self.maxTransfers = maxTransfers
            self.maxConcurrentPerHost = maxConcurrentPerHost
            self.maxConcurrentPerGroup = maxConcurrentPerGroup
            self.proxy = proxy
            self.destinationCheck = destinationCheck
            self.resolve = resolve
        }
    }

    public let configuration: Configuration
    private let engine: CurlEngine
    private let admission: Admission

    public init(configuration: Configuration = Configuration()) throws(CurlError) {
        try Self.validate(configuration.timeouts)
        guard configuration.maxResponseBytes > 0 else {
            throw CurlError(kind: .invalidRequest, message: "maxResponseBytes must be positive")
        }
        let schemes = configuration.allowedSchemes.map { $0.lowercased() }
        guard !schemes.isEmpty, schemes.allSatisfy({ $0 == "https" || $0 == "http" }) else {
            throw CurlError(kind: .invalidRequest, message: "allowedSchemes may only hold http and https")
        }
        guard configuration.maxTransfers > 0, configuration.maxConcurrentPerHost > 0, configuration.maxConcurrentPerGroup > 0 else {
            throw CurlError(kind: .invalidRequest, message: "maxTransfers, maxConcurrentPerHost and maxConcurrentPerGroup must be positive")
        }
        self.configuration = configuration
        self.admission = Admission(
            limits: .init(
                total: configuration.maxTransfers, perOrigin: configuration.maxConcurrentPerHost,
                perGroup: configuration.maxConcurrentPerGroup))
        self.engine = try CurlEngine(
            maxCachedConnections: configuration.maxCachedConnections, maxTotalConnections: configuration.maxTransfers,
            maxHostConnections: configuration.maxConcurrentPerHost)
    }

    deinit {
        engine.shutdown()
    }

    /// Total new connections opened by all finished transfers.
    public var connectionsOpened: Int { engine.connectionsOpened }

    /// Stops the engine thread; transfers still running fail with ``CurlError/Kind/shutdown``.
    public func shutdown() {
        engine.shutdown()
    }

    /// ``shutdown()``, then blocks this thread (at most 5 s) until the engine thread has closed its
    /// connections: for a process about to exit. `exit()` runs OpenSSL's cleanup, and a connection
    /// still being freed on the engine thread then reads freed memory (`orchard doctor` aborted now
    /// and then). Not for a process that goes on: it holds a thread of the cooperative pool.
    public func shutdownBeforeExit() {
        engine.shutdown()
        engine.waitUntilStopped()
    }

    /// Requests in flight now (queued for libcurl or running).
    public var transfersInFlight: Int { admission.inFlight }

    /// Performs a request. Throws ``CurlError``; a cancelled task aborts its transfer. When as many
    /// requests as the configuration allows are in flight (in all, to the origin, or in the
    /// request's group), fails at once with ``CurlError/Kind/busy`` without sending anything.
    public func execute(_ request: CurlRequest) async throws(CurlError) -> CurlResponse {
        try await execute(request) { _ throws(CurlError) in }
    }

    /// ``execute(_:)`` with a last look at the easy handle before it is sent (tests turn on libcurl's trace).
    func execute(_ request: CurlRequest, prepare: (UnsafeMutableRawPointer) throws(CurlError) -> Void) async throws(CurlError)
        -> CurlResponse
    {
        try await traced(request) { request throws(CurlError) in try await send(request, prepare: prepare) }
    }

    private func send(_ request: CurlRequest, prepare: (UnsafeMutableRawPointer) throws(CurlError) -> Void) async throws(CurlError)
        -> CurlResponse
    {
        let timeouts = request.timeouts ?? configuration.timeouts
        try Self.validate(timeouts)
        if request.connectTo != nil, configuration.proxy != nil, configuration.destinationCheck != nil {
            // The check's pin is itself a connect-to entry, made for the URL's host.
            throw CurlError(kind: .invalidRequest, message: "connectTo cannot be combined with a proxy and a destination check")
        }
        let ticket = try admission.enter(origin: Admission.origin(of: request.url), group: request.concurrencyGroup)
        defer { admission.leave(ticket) }
        var route = Route(
            proxy: configuration.proxy, addressGuard: configuration.destinationCheck.map { .check($0) }, connectTo: request.connectTo,
            resolve: configuration.resolve)
        if let check = configuration.destinationCheck, configuration.proxy != nil {
            // The connection goes to the proxy, whose address is the operator's: the check moves to
            // the lookup, and the proxy is told the checked address instead of the name.
            route.connectTo = try await pin(request.url, check: check, timeouts: timeouts)
            route.addressGuard = nil
        }
        let transfer = try Transfer(
            request: request,
            timeouts: timeouts,
            maxResponseBytes: configuration.maxResponseBytes,
            protocols: configuration.allowedSchemes.map { $0.lowercased() }.joined(separator: ","),
            route: route
        )
        try prepare(transfer.easy)
        return try await perform(transfer).get()
    }

    /// Runs a built transfer on the engine; a cancelled task aborts it.
    func perform(_ transfer: Transfer) async -> Result<CurlResponse, CurlError> {
        await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                transfer.continuation = continuation
                engine.submit(transfer)
            }
        } onCancel: {
            engine.cancel(transfer)
        }
    }

    private static func validate(_ timeouts: CurlTimeouts) throws(CurlError) {
        guard timeouts.connect > .zero, timeouts.total > .zero, timeouts.connect <= timeouts.total else {
            throw CurlError(kind: .invalidRequest, message: "timeouts must be positive and connect ≤ total")
        }
        guard timeouts.total <= CurlTimeouts.maximumTotal else {
            throw CurlError(
                kind: .invalidRequest,
                message:
                    "total timeout \(timeouts.total) exceeds \(CurlTimeouts.maximumTotal), Safari's Apple Pay sheet would give up first"
            )
        }
    }
}

extension Duration {
    var milliseconds: Int {
        let (seconds, attoseconds) = components
        return Int(seconds) * 1000 + Int(attoseconds / 1_000_000_000_000_000)
    }
}
