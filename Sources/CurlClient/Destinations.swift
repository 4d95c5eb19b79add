import CCurlShims

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// Decides which addresses a client may connect to, judged on each address a host resolved to
/// when the connection is made (so a name that resolves elsewhere later, DNS rebinding, is
/// judged again), never on the URL's text alone.
public struct CurlDestinationCheck: Sendable {
    /// Why a connection to `address` (4 bytes for IPv4, 16 for IPv6, network order) is refused,
    /// written to follow "resolved to" (`10.0.0.5, not a public address (private-use, 10.0.0.0/8)`),
    /// or nil when it may be made.
    public let refusal: @Sendable (_ address: [UInt8]) -> String?

    public init(refusal: @escaping @Sendable (_ address: [UInt8]) -> String?) {
        self.refusal = refusal
    }
}

/// How one transfer reaches its host.
struct Route {
    /// How the addresses libcurl resolves are treated before a socket is opened for them.
    enum AddressGuard {
        /// Each address goes through the check; a refused one gets no connection.
        case check(CurlDestinationCheck)
        /// Every address is recorded and none connected to: a name lookup only.
        case lookUp
    }

    var proxy: String?
    var addressGuard: AddressGuard?
    /// A CURLOPT_CONNECT_TO entry (`host:port:address:port`): the connection goes to that address,
    /// while TLS (SNI, certificate check) and the Host header keep the URL's host.
    var connectTo: String?
    /// CURLOPT_RESOLVE entries (`host:port:address`).
    var resolve: [String] = []
    /// Stop once connected (CURLOPT_CONNECT_ONLY): for a lookup, which connects to nothing anyway.
    var connectOnly = false
}

extension Transfer {
    /// The guard's verdict on one address libcurl is about to connect to (engine thread).
    fileprivate func admit(_ address: [UInt8]) -> Bool {
        switch route.addressGuard {
        case nil:
            return true
        case .lookUp:
            lookedUp.append(address)
            return false
        case .check(let check):
            guard let refusal = check.refusal(address) else {
                admitted += 1
                return true
            }
            if !refusals.contains(refusal) { refusals.append(refusal) }
            return false
        }
    }

    /// Installs the route's options on the easy handle.
    func configureRoute() throws(CurlError) {
        // An empty proxy turns off libcurl's reading of http_proxy, HTTPS_PROXY, ALL_PROXY and
        // NO_PROXY: only a configured proxy is ever used.
        try setRouteOption(CURLOPT_PROXY, route.proxy ?? "")
        if route.addressGuard != nil {
            let storage = UnsafeMutablePointer<orchard_address_guard>.allocate(capacity: 1)
            storage.initialize(to: orchard_address_guard(check: addressCallback, userdata: Unmanaged.passUnretained(self).toOpaque()))
            addressGuardStorage = storage
            try checkRouteCode(orchard_curl_easy_set_address_guard(easy, storage))
        }
        if !route.resolve.isEmpty {
            for entry in route.resolve { resolveList = curl_slist_append(resolveList, entry) }
            try checkRouteCode(orchard_curl_easy_setopt_slist(easy, CURLOPT_RESOLVE, resolveList))
        }
        if let connectTo = route.connectTo {
            connectToList = curl_slist_append(connectToList, connectTo)
            try checkRouteCode(orchard_curl_easy_setopt_slist(easy, CURLOPT_CONNECT_TO, connectToList))
            // Through an HTTP proxy even an http:// URL goes in a CONNECT tunnel to the pinned
            // address; a plain proxied GET would name the host and let the proxy resolve it.
            if route.proxy != nil { try checkRouteCode(orchard_curl_easy_setopt_long(easy, CURLOPT_HTTPPROXYTUNNEL, 1)) }
        }
        if route.connectOnly { try checkRouteCode(orchard_curl_easy_setopt_long(easy, CURLOPT_CONNECT_ONLY, 1)) }
    }

    /// The failure to report when every address the host resolved to was refused; nil otherwise.
    func refusedDestination(curlCode: Int32) -> CurlError? {
        guard case .check = route.addressGuard, admitted == 0, !refusals.isEmpty else { return nil }
        return CurlError(
            kind: .refusedDestination, curlCode: curlCode,
            message: "refused: \(Destination(url: url).host) resolved to \(refusals.joined(separator: "; "))")
    }

    private func setRouteOption(_ option: CURLoption, _ value: String) throws(CurlError) {
        try checkRouteCode(orchard_curl_easy_setopt_string(easy, option, value))
    }

    private func checkRouteCode(_ code: CURLcode) throws(CurlError) {
        guard code != CURLE_OK else { return }
        throw CurlError(
            kind: .invalidRequest, curlCode: Int32(code.rawValue),
            message: "cannot set option: \(String(cString: curl_easy_strerror(code)))")
    }
}

private let addressCallback: orchard_address_check = { userdata, address, length in
    guard let userdata, let address else { return 0 }
    let transfer = Unmanaged<Transfer>.fromOpaque(userdata).takeUnretainedValue()
    return transfer.admit(Array(UnsafeBufferPointer(start: address, count: length))) ? 1 : 0
}

/// A URL's host (as written, IPv6 in brackets, lowercased) and port.
struct Destination {
    var host: String
    var port: Int

    init(url: String) {
        let origin = Admission.origin(of: url)
        let authority = origin[origin.firstRange(of: "://")!.upperBound...]
        let colon = authority.lastIndex(of: ":")!
        host = String(authority[..<colon])
        port = Int(authority[authority.index(after: colon)...]) ?? 443
    }

    /// An address as CURLOPT_CONNECT_TO takes it: dotted quad, or IPv6 in brackets.
    static func text(_ address: [UInt8]) -> String {
        var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        let family = address.count == 4 ? AF_INET : AF_INET6
        _ = address.withUnsafeBytes { raw in inet_ntop(family, raw.baseAddress, &buffer, socklen_t(buffer.count)) }
        let text = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return address.count == 4 ? text : "[\(text)]"
    }
}

extension CurlHTTPClient {
    /// Looks `url`'s host up without connecting to it, and returns the CURLOPT_CONNECT_TO entry
    /// that pins the connection to the first address `check` allows. Used before going through a
    /// proxy, which would otherwise resolve the name itself, out of the check's reach.
    func pin(_ url: String, check: CurlDestinationCheck, timeouts: CurlTimeouts) async throws(CurlError) -> String {
        let destination = Destination(url: url)
        let lookup = try Transfer(
            request: CurlRequest(url: url), timeouts: CurlTimeouts(connect: timeouts.connect, total: timeouts.connect),
            maxResponseBytes: 1, protocols: configuration.allowedSchemes.map { $0.lowercased() }.joined(separator: ","),
            route: Route(addressGuard: .lookUp, resolve: configuration.resolve, connectOnly: true))
        let result = await perform(lookup)
        if case .failure(let error) = result, error.kind == .cancelled || error.kind == .shutdown { throw error }
        guard !lookup.lookedUp.isEmpty else {
            let detail = (try? result.get()).map { _ in "no address" } ?? result.failureMessage
            throw CurlError(
                kind: .connectFailed,
                message:
                    "\(destination.host) could not be resolved here (\(detail)); with a proxy this client still resolves and checks the host itself, then has the proxy connect to the address it checked"
            )
        }
        var refusals: [String] = []
        for address in lookup.lookedUp {
            guard let refusal = check.refusal(address) else {
                return "\(destination.host):\(destination.port):\(Destination.text(address)):\(destination.port)"
            }
            if !refusals.contains(refusal) { refusals.append(refusal) }
        }
        throw CurlError(kind: .refusedDestination, message: "refused: \(destination.host) resolved to \(refusals.joined(separator: "; "))")
    }
}

extension Result where Failure == CurlError {
    fileprivate var failureMessage: String {
        if case .failure(let error) = self { return error.message }
        return ""
    }
}
