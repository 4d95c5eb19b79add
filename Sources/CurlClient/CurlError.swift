/// A failed transfer: what went wrong, libcurl's code and its message.
public struct CurlError: Error, Sendable, CustomStringConvertible {
    /// The kind of failure, for callers that map errors to outcomes.
    public enum Kind: String, Sendable {
        /// The request could not be built (bad URL, scheme not allowed, bad option).
        case invalidRequest
        /// The host name could not be resolved or the TCP connection failed.
        case connectFailed
        /// The TLS handshake failed: untrusted server, rejected client certificate, unreadable identity.
        case tls
        /// The connect or total timeout elapsed.
        case timedOut
        /// The peer closed or reset the connection before a complete response.
        case connectionLost
        /// The response body exceeded the configured cap.
        case responseTooLarge
        /// The calling task was cancelled.
        case cancelled
        /// The client was shut down.
        case shutdown
        /// As many requests as allowed (in all, to this origin or for this group) are already in
        /// flight: this one was refused at once and never sent, so it may be tried again.
        case busy
        /// Every address the host resolved to was refused by the client's ``CurlDestinationCheck``
        /// (or, through a proxy, by the lookup before it): no connection was made, nothing was sent.
        case refusedDestination
        /// Any other libcurl failure.
        case other
    }

    public var kind: Kind
    /// libcurl's `CURLcode` (0 when the error did not come from libcurl).
    public var curlCode: Int32
    /// libcurl's detailed message, or Orchard's own.
    public var message: String

    public init(kind: Kind, curlCode: Int32 = 0, message: String) {
        self.kind = kind
        self.curlCode = curlCode
        self.message = message
    }

    public var description: String {
        curlCode == 0 ? "\(kind.rawValue): \(message)" : "\(kind.rawValue) (curl \(curlCode)): \(message)"
    }

    /// Maps a libcurl result code to a kind.
    static func kind(forCurlCode code: Int32) -> Kind {
        switch code {
        case 1, 3, 43, 48, 49: .invalidRequest  // unsupported protocol, malformed URL, bad option
        case 5, 6, 7: .connectFailed  // proxy/host resolution, connect
        case 28: .timedOut
        case 35, 53, 54, 58, 59, 60, 64, 66, 77, 80, 82, 83, 90, 91, 98: .tls
        case 18, 52, 55, 56, 92, 95: .connectionLost  // partial, empty reply, send/recv errors
        case 63: .responseTooLarge  // CURLE_FILESIZE_EXCEEDED
        case 42: .cancelled
        default: .other
        }
    }
}
