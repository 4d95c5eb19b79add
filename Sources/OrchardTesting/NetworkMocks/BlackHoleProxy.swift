import NIOCore
import NIOPosix
import Synchronization

/// A loopback TCP proxy of the tests' own, between a client and a server, that can turn into a
/// black hole: ``blackHole()`` stops reading on every connection in both directions without
/// closing any, as a network that drops packets does (on loopback the kernel still accepts what
/// fits in its buffers, but nothing reaches the other side and no answer comes back);
/// connections accepted meanwhile are held the same way. ``restore()`` forwards again, what
/// was held included, as TCP delivers retransmitted data once a network heals.
public final class BlackHoleProxy: Sendable {
    /// The port clients connect to, on 127.0.0.1.
    public let port: Int
    private let server: any Channel
    private let group: MultiThreadedEventLoopGroup
    private let open = Connections()

    /// Listens on a free loopback port and forwards each connection to `127.0.0.1:upstreamPort`.
    public init(upstreamPort: Int) async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        self.group = group
        let open = self.open
        let server = try await ServerBootstrap(group: group)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { inbound in
                inbound.setOption(.autoRead, value: false).flatMap {
                    ClientBootstrap(group: inbound.eventLoop).channelOption(.autoRead, value: false).connect(
                        host: "127.0.0.1", port: upstreamPort)
                }.flatMap { outbound in
                    let (left, right) = Glue.pair()
                    return inbound.pipeline.addHandler(left).flatMap { outbound.pipeline.addHandler(right) }.map {
                        open.adopt([inbound, outbound])
                    }
                }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        self.server = server
        port = server.localAddress?.port ?? 0
    }

    /// Every connection's two channels, and whether they are held.
    private final class Connections: Sendable {
        private let state = Mutex<(holding: Bool, channels: [ObjectIdentifier: any Channel])>((false, [:]))

        /// Registers a connection's two channels, reading or held as the proxy is now.
        func adopt(_ channels: [any Channel]) {
            let holding = state.withLock { state in
                for channel in channels { state.channels[ObjectIdentifier(channel)] = channel }
                return state.holding
            }
            for channel in channels {
                channel.closeFuture.whenComplete { _ in
                    _ = self.state.withLock { $0.channels.removeValue(forKey: ObjectIdentifier(channel)) }
                }
                channel.setOption(.autoRead, value: !holding).whenComplete { _ in }
            }
        }

        func setReading(_ reading: Bool) async {
            let channels = state.withLock { state in
                state.holding = !reading
                return Array(state.channels.values)
            }
            for channel in channels {
                // A channel closed meanwhile has nothing to read.
                try? await channel.setOption(.autoRead, value: reading).get()
            }
        }

        var all: [any Channel] { state.withLock { Array($0.channels.values) } }
    }

    /// Stops forwarding in both directions on every connection, open and to come, closing none.
    public func blackHole() async {
        await open.setReading(false)
    }

    /// Forwards again.
    public func restore() async {
        await open.setReading(true)
    }

    /// How many connections (pairs of channels) are open through the proxy.
    public var connections: Int { open.all.count / 2 }

    /// Closes the listener and every connection.
    public func stop() async {
        for channel in open.all { try? await channel.close().get() }
        try? await server.close().get()
        try? await group.shutdownGracefully()
    }
}

/// Writes what one channel reads to its partner, and closes the partner when it closes.
private final class Glue: ChannelDuplexHandler, @unchecked Sendable {
    typealias InboundIn = NIOAny
    typealias OutboundIn = NIOAny
    // Touched only on the pair's one event loop (the outbound connection is made on the inbound's).
    private var partner: Glue?
    private var context: ChannelHandlerContext?

    static func pair() -> (Glue, Glue) {
        let (left, right) = (Glue(), Glue())
        left.partner = right
        right.partner = left
        return (left, right)
    }

    func handlerAdded(context: ChannelHandlerContext) { self.context = context }

    func handlerRemoved(context: ChannelHandlerContext) {
        self.context = nil
        partner = nil
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        partner?.context?.write(data, promise: nil)
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        partner?.context?.flush()
    }

    func channelInactive(context: ChannelHandlerContext) {
        partner?.context?.close(promise: nil)
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }
}
