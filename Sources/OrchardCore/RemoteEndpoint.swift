import Foundation

/// A remote HTTPS service Orchard calls (Apple's gateway, a processor): its origin, the
/// certificates trusted for it and how long a call may take. Adapters turn it into their
/// transport's own types; the configuration never names the transport.
public struct RemoteEndpoint: Sendable, Equatable {
    /// Which certificate authorities a server must chain to.
    public enum Trust: Sendable, Equatable {
        /// The operating system's store.
        case system
        /// Only the PEM certificates given (a test CA).
        case caPEM([UInt8])

        /// The PEM bundle, or nil for the system store.
        public var caPEM: [UInt8]? {
            if case .caPEM(let pem) = self { return pem }
            return nil
        }
    }

    /// `https://host[:port]`, no trailing slash: every URL called starts with it.
    public var baseURL: String
    public var trust: Trust
    public var connectTimeout: Duration
    /// The whole call, connection included.
    public var timeout: Duration
    /// False for a test host (a mock): logged as a warning at startup.
    public var isProductionHost: Bool

    public init(baseURL: String, trust: Trust = .system, connectTimeout: Duration, timeout: Duration, isProductionHost: Bool) {
        self.baseURL = baseURL
        self.trust = trust
        self.connectTimeout = connectTimeout
        self.timeout = timeout
        self.isProductionHost = isProductionHost
    }

    /// Whether `url` is on this origin (https, same host and port, no credentials): links a
    /// service returns are followed only when they are.
    public func owns(_ url: String) -> Bool {
        guard let base = URLComponents(string: baseURL), let other = URLComponents(string: url) else { return false }
        return other.scheme == "https" && other.user == nil && other.host?.lowercased() == base.host?.lowercased()
            && (other.port ?? 443) == (base.port ?? 443)
    }
}
