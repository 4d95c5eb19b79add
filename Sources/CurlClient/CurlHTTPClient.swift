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

        public init(
            timeouts: CurlTimeouts = CurlTimeouts(),
            maxResponseBytes: Int = 1 << 20,
            allowedSchemes: [String] = ["https"],
            maxCachedConnections: Int = 128
        ) {
            self.timeouts = timeouts
            self.maxResponseBytes = maxResponseBytes
            self.allowedSchemes = allowedSchemes
            self.maxCachedConnections = maxCachedConnections
        }
    }

    public let configuration: Configuration
    private let engine: CurlEngine

    public init(configuration: Configuration = Configuration()) throws(CurlError) {
        try Self.validate(configuration.timeouts)
        guard configuration.maxResponseBytes > 0 else {
            throw CurlError(kind: .invalidRequest, message: "maxResponseBytes must be positive")
        }
        let schemes = configuration.allowedSchemes.map { $0.lowercased() }
        guard !schemes.isEmpty, schemes.allSatisfy({ $0 == "https" || $0 == "http" }) else {
            throw CurlError(kind: .invalidRequest, message: "allowedSchemes may only hold http and https")
        }
        self.configuration = configuration
        self.engine = try CurlEngine(maxCachedConnections: configuration.maxCachedConnections)
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

    /// Performs a request. Throws ``CurlError``; a cancelled task aborts its transfer.
    public func execute(_ request: CurlRequest) async throws(CurlError) -> CurlResponse {
        let timeouts = request.timeouts ?? configuration.timeouts
        try Self.validate(timeouts)
        let transfer = try Transfer(
            request: request,
            timeouts: timeouts,
            maxResponseBytes: configuration.maxResponseBytes,
            protocols: configuration.allowedSchemes.map { $0.lowercased() }.joined(separator: ",")
        )
        let result: Result<CurlResponse, CurlError> = await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                transfer.continuation = continuation
                engine.submit(transfer)
            }
        } onCancel: {
            engine.cancel(transfer)
        }
        return try result.get()
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
