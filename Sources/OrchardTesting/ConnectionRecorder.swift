import NIOCore
import NIOPosix
import Synchronization

/// A loopback listener that only counts the connections it accepts and closes them: a proxy
/// that must never be used, or a check that a configured one is.
public final class ConnectionRecorder: Sendable {
    private let channels = ChannelTracker()
    private let accepted = Atomic<Int>(0)

    public init() {}

    /// Connections accepted so far.
    public var connections: Int { accepted.load(ordering: .relaxed) }

    /// `http://127.0.0.1:<port>`, for a proxy variable.
    public var url: String { "http://127.0.0.1:\(channels.port)" }

    @discardableResult
    public func start() async throws -> Int {
        try await channels.listen(host: "127.0.0.1", port: 0) { [self] channel in
            accepted.add(1, ordering: .relaxed)
            channel.close(promise: nil)
        }
    }

    public func stop() async {
        await channels.closeAll()
    }
}
