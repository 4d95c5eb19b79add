import NIOCore
import NIOHTTP1
import NIOPosix
import Synchronization

/// The listening channel and open connections of a mock server, so ``closeAll()`` can stop it.
final class ChannelTracker: Sendable {
    private let channels = Mutex<(server: (any Channel)?, children: [ObjectIdentifier: any Channel])>((nil, [:]))

    /// Remembers a new connection until it closes.
    func track(_ channel: any Channel) {
        let id = ObjectIdentifier(channel)
        channels.withLock { $0.children[id] = channel }
        channel.closeFuture.whenComplete { [self] _ in _ = channels.withLock { $0.children.removeValue(forKey: id) } }
    }

    func listening(on channel: any Channel) {
        channels.withLock { $0.server = channel }
    }

    /// The bound port (0 before listening).
    var port: Int { channels.withLock { $0.server?.localAddress?.port ?? 0 } }

    /// Binds a loopback server whose every connection is tracked and set up by `configure`;
    /// returns the bound port.
    func listen(
        host: String, port: Int, configure: @escaping @Sendable (any Channel) throws -> Void
    ) async throws -> Int {
        let bootstrap = ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.backlog, value: 256)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(.socketOption(.tcp_nodelay), value: 1)
            .childChannelInitializer { [self] channel in
                channel.eventLoop.makeCompletedFuture {
                    track(channel)
                    try configure(channel)
                }
            }
        let channel = try await bootstrap.bind(host: host, port: port).get()
        listening(on: channel)
        return channel.localAddress?.port ?? 0
    }

    /// Closes every open connection and keeps listening.
    func closeConnections() async {
        let children = channels.withLock { Array($0.children.values) }
        for child in children { try? await child.close() }
    }

    /// Stops listening and closes every open connection.
    func closeAll() async {
        let (server, children) = channels.withLock { state in
            defer { state = (nil, [:]) }
            return (state.server, Array(state.children.values))
        }
        try? await server?.close()
        for child in children { try? await child.close() }
    }
}

/// Gathers one HTTP request's parts: the head, then the body up to `limit` bytes.
struct RequestCollector {
    let limit: Int
    private var head: HTTPRequestHead?
    private var body: [UInt8] = []
    private var tooLarge = false

    init(limit: Int) { self.limit = limit }

    /// The whole request once its end arrives; `tooLarge` when the body passed the limit.
    mutating func consume(_ part: HTTPServerRequestPart) -> (head: HTTPRequestHead, body: [UInt8], tooLarge: Bool)? {
        switch part {
        case .head(let head):
            self.head = head
            body.removeAll(keepingCapacity: true)
            tooLarge = false
        case .body(var chunk):
            if body.count + chunk.readableBytes > limit {
                tooLarge = true
            } else if let bytes = chunk.readBytes(length: chunk.readableBytes) {
                body.append(contentsOf: bytes)
            }
        case .end:
            guard let head else { return nil }
            self.head = nil
            return (head, body, tooLarge)
        }
        return nil
    }
}
