import NIOCore
import NIOHTTP1
import NIOPosix
import Synchronization

/// An HTTP proxy on loopback that records the request line of each request it is sent (for a
/// tunnel, `CONNECT host:port`) and refuses it with 403: it shows which host a client asked the
/// proxy to reach, and that a refused destination never reached the proxy at all.
public final class RecordingProxy: Sendable {
    private let channels = ChannelTracker()
    private let requests = Mutex<[String]>([])
    private let accepted = Atomic<Int>(0)

    public init() {}

    /// `http://127.0.0.1:<port>`.
    public var url: String { "http://127.0.0.1:\(channels.port)" }
    /// Each request line received: `CONNECT 127.0.0.1:4443`.
    public var requestLines: [String] { requests.withLock { $0 } }
    /// Connections accepted so far.
    public var connections: Int { accepted.load(ordering: .relaxed) }

    @discardableResult
    public func start() async throws -> Int {
        try await channels.listen(host: "127.0.0.1", port: 0) { [self] channel in
            accepted.add(1, ordering: .relaxed)
            try channel.pipeline.syncOperations.configureHTTPServerPipeline(withErrorHandling: true)
            try channel.pipeline.syncOperations.addHandler(RecordingProxyHandler(proxy: self))
        }
    }

    public func stop() async {
        await channels.closeAll()
    }

    fileprivate func record(_ line: String) {
        requests.withLock { $0.append(line) }
    }
}

private final class RecordingProxyHandler: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    let proxy: RecordingProxy

    init(proxy: RecordingProxy) { self.proxy = proxy }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard case .head(let head) = unwrapInboundIn(data) else { return }
        proxy.record("\(head.method.rawValue) \(head.uri)")
        var headers = HTTPHeaders()
        headers.add(name: "Content-Length", value: "0")
        headers.add(name: "Connection", value: "close")
        context.write(wrapOutboundOut(.head(HTTPResponseHead(version: head.version, status: .forbidden, headers: headers))), promise: nil)
        context.writeAndFlush(wrapOutboundOut(.end(nil))).assumeIsolated().whenComplete { _ in context.close(promise: nil) }
    }
}
