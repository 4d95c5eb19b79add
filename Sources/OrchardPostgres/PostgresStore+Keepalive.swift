import NIOCore
import OrchardCore
import PostgresNIO
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// TCP keepalive on this end of each pooled connection. postgres-nio opens the sockets and offers
/// no socket options, and its keepalive is a query on idle connections only; the kernel's own
/// starts probing after two hours. Set here once per connection, on its first lease: a peer that
/// vanished is found within `keepaliveIdle + keepaliveInterval × keepaliveCount`, and on Linux
/// `TCP_USER_TIMEOUT` ends a connection whose sent data goes unacknowledged as long.
extension PostgresStore {
    func keepAlive(_ connection: PostgresConnection) {
        guard let limits = keepalive else { return }
        let first = keptAlive.withLock { $0.insert(connection.id).inserted }
        guard first, let channel = Self.channel(of: connection) else { return }
        connection.closeFuture.whenComplete { _ in _ = self.keptAlive.withLock { $0.remove(connection.id) } }
        var options: [(ChannelOptions.Types.SocketOption, Int)] = [(.init(level: .socket, name: .so_keepalive), 1)]
        #if canImport(Glibc)
            let tcp = NIOBSDSocket.OptionLevel.tcp
            options += [
                (.init(level: tcp, name: .init(rawValue: TCP_KEEPIDLE)), Int(limits.keepaliveIdle.components.seconds)),
                (.init(level: tcp, name: .init(rawValue: TCP_KEEPINTVL)), Int(limits.keepaliveInterval.components.seconds)),
                (.init(level: tcp, name: .init(rawValue: TCP_KEEPCNT)), limits.keepaliveCount),
                (.init(level: tcp, name: .init(rawValue: Int32(TCP_USER_TIMEOUT))), Int(limits.userTimeout.milliseconds)),
            ]
        #endif
        for (option, value) in options {
            channel.setOption(option, value: value).whenFailure { [logger] error in
                logger.warning("PostgreSQL connection: a TCP keepalive option could not be set", metadata: ["error": "\(error)"])
            }
        }
    }

    /// The connection's socket channel. postgres-nio keeps it internal; it is read by reflection,
    /// so a version that renames it leaves keepalive to the server's end (``sessionParameters``)
    /// instead of failing.
    static func channel(of connection: PostgresConnection) -> (any Channel)? {
        Mirror(reflecting: connection).children.first { $0.label == "channel" }?.value as? any Channel
    }
}
