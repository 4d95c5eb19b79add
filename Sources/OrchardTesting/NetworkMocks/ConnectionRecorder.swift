import NIOCore
import NIOPosix
import Synchronization

/// A loopback listener that only counts the connections it accepts: a proxy that must never be
/// used, a check that a configured one is, or (holding them open, answering nothing) an
/// upstream whose calls stay in flight until the caller gives up.
public final class ConnectionRecorder: Sendable {
    private let channels = ChannelTracker()
    private let accepted = Atomic<Int>(0)
    private let holdOpen: Bool

    /// - Parameter holdOpen: keep each connection open without answering (default: close it at once).
    public init(holdOpen: Bool = false) {
        self.holdOpen = holdOpen
    }

    /// Connections accepted so far.
    public var connections: Int { accepted.load(ordering: .relaxed) }

    /// `http://127.0.0.1:<port>`, for a proxy variable.
    public var url: String { "http://127.0.0.1:\(channels.port)" }

    @discardableResult
    public func start() async throws -> Int {
        try await channels.listen(host: "127.0.0.1", port: 0) { [self] channel in
            accepted.add(1, ordering: .relaxed)
            if !holdOpen { channel.close(promise: nil) }
        }
    }

    public func stop() async {
        await channels.closeAll()
    }
}
