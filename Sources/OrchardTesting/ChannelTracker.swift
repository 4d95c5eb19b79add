import NIOCore
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
