import OrchardCore

/// Whose W3C `traceparent` a request's span continues (`server.acceptTraceparent`). A trace ID
/// from a stranger would be logged and sent on to Apple and processors as if Orchard's own.
public enum TraceparentTrust: String, Sendable, CaseIterable {
    /// Peers in `server.trustedProxies` (the default: a proxy or gateway in front sets it).
    case trustedProxies
    case anyone
    /// Every request starts a new trace.
    case nobody

    /// Whether a request from `peer` (the socket's, not a header's) continues its caller's trace.
    public func accepts(_ peer: IPAddress?, trustedProxies: [IPNetwork]) -> Bool {
        switch self {
        case .anyone: true
        case .nobody: false
        case .trustedProxies: peer.map { address in trustedProxies.contains { $0.contains(address) } } ?? false
        }
    }
}
