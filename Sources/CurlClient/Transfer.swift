import CCurlShims
import Synchronization

/// One request in flight: its easy handle, the buffers libcurl writes into and the
/// continuation that receives the outcome. Owned by the engine thread once submitted.
final class Transfer: @unchecked Sendable {
    let easy: UnsafeMutableRawPointer
    let cancelled = Atomic<Bool>(false)
    var continuation: CheckedContinuation<Result<CurlResponse, CurlError>, Never>?

    private var requestHeaders: UnsafeMutablePointer<curl_slist>?
    private let errorBuffer: UnsafeMutablePointer<CChar>
    private let maxResponseBytes: Int
    private var body: [UInt8] = []
    private var headers: [(name: String, value: String)] = []
    private var tooLarge = false
    private let readsPeerCertificates: Bool

    /// The request's URL, for messages.
    let url: String
    let route: Route
    /// Route state (Destinations.swift), touched by the engine thread only once submitted: the
    /// addresses a lookup found, the reasons addresses were refused, how many were allowed.
    var lookedUp: [[UInt8]] = []
    var refusals: [String] = []
    var admitted = 0
    var addressGuardStorage: UnsafeMutablePointer<orchard_address_guard>?
    var resolveList: UnsafeMutablePointer<curl_slist>?
    var connectToList: UnsafeMutablePointer<curl_slist>?

    init(request: CurlRequest, timeouts: CurlTimeouts, maxResponseBytes: Int, protocols: String, route: Route) throws(CurlError) {
        _ = CurlEngine.globalInit
        guard let easy = curl_easy_init() else {
            throw CurlError(kind: .other, message: "curl_easy_init failed")
        }
        self.easy = easy
        self.url = request.url
        self.route = route
        self.maxResponseBytes = maxResponseBytes
        self.readsPeerCertificates = request.readsPeerCertificates
        self.errorBuffer = .allocate(capacity: Int(CURL_ERROR_SIZE))
        errorBuffer.initialize(repeating: 0, count: Int(CURL_ERROR_SIZE))
        do {
            try configure(request, timeouts: timeouts, protocols: protocols)
            try configureRoute()
        } catch {
            release()
            throw error
        }
    }

    deinit {
        release()
    }

    private var released = false

    /// Frees the easy handle and buffers. The engine calls it on its own thread once the
    /// handle has left the multi, because cleanup touches the shared TLS-session cache.
    func release() {
        guard !released else { return }
        released = true
        curl_easy_cleanup(easy)
        curl_slist_free_all(requestHeaders)
        curl_slist_free_all(resolveList)
        curl_slist_free_all(connectToList)
        addressGuardStorage?.deallocate()
        errorBuffer.deallocate()
    }

    private func configure(_ request: CurlRequest, timeouts: CurlTimeouts, protocols: String) throws(CurlError) {
        try set(CURLOPT_URL, request.url)
        try set(CURLOPT_PROTOCOLS_STR, protocols)
        try set(CURLOPT_REDIR_PROTOCOLS_STR, protocols)
        try set(CURLOPT_FOLLOWLOCATION, 0)
        try set(CURLOPT_NOSIGNAL, 1)
        try set(CURLOPT_TCP_KEEPALIVE, 1)
        if request.freshConnection || request.readsPeerCertificates { try set(CURLOPT_FRESH_CONNECT, 1) }
        // HTTP/2 over TLS only: ALPN offers h2 alone, so a server without it fails the handshake.
        if request.requiresHTTP2 {
            try set(CURLOPT_HTTP_VERSION, Int(CURL_HTTP_VERSION_2TLS))
            try set(CURLOPT_SSL_ENABLE_ALPN, 1)
        }
        if request.readsPeerCertificates {
            // A resumed session or a kept connection would show an earlier handshake's certificates.
            try set(CURLOPT_CERTINFO, 1)
            try set(CURLOPT_SSL_SESSIONID_CACHE, 0)
            try set(CURLOPT_FORBID_REUSE, 1)
        }
        try set(CURLOPT_CONNECTTIMEOUT_MS, timeouts.connect.milliseconds)
        try set(CURLOPT_TIMEOUT_MS, timeouts.total.milliseconds)
        try set(CURLOPT_SSLVERSION, Int(CURL_SSLVERSION_TLSv1_2))
        try set(CURLOPT_SSL_VERIFYPEER, 1)
        try set(CURLOPT_SSL_VERIFYHOST, 2)
        try check(orchard_curl_easy_setopt_off_t(easy, CURLOPT_MAXFILESIZE_LARGE, curl_off_t(maxResponseBytes)))
        try check(orchard_curl_easy_setopt_pointer(easy, CURLOPT_ERRORBUFFER, errorBuffer))

        // A configured CA replaces the system store: libcurl would otherwise load its built-in
        // bundle and folder beside it, and trust any public CA for a private upstream.
        switch request.trust {
        case .system: break
        case .caFile(let path):
            try set(CURLOPT_CAINFO, path)
            try check(orchard_curl_easy_setopt_string(easy, CURLOPT_CAPATH, nil))
        case .caPEM(let bytes):
            try setBlob(CURLOPT_CAINFO_BLOB, bytes)
            try check(orchard_curl_easy_setopt_string(easy, CURLOPT_CAINFO, nil))
            try check(orchard_curl_easy_setopt_string(easy, CURLOPT_CAPATH, nil))
        }
        if let identity = request.identity {
            try configure(identity)
        }

        let method = request.method.uppercased()
        switch method {
        case "GET": try set(CURLOPT_HTTPGET, 1)
        case "POST": try set(CURLOPT_POST, 1)
        default: try set(CURLOPT_CUSTOMREQUEST, method)
        }
        if let body = request.body {
            try check(orchard_curl_easy_setopt_off_t(easy, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(body.count)))
            // COPYPOSTFIELDS: libcurl keeps its own copy, so the array may go away.
            let code = body.withUnsafeBytes { raw in
                orchard_curl_easy_setopt_pointer(
                    easy, CURLOPT_COPYPOSTFIELDS, UnsafeMutableRawPointer(mutating: raw.baseAddress ?? UnsafeRawPointer(errorBuffer)))
            }
            try check(code)
        }
        // An empty Expect header stops libcurl waiting for "100 Continue" on larger bodies.
        for (name, value) in request.headers + [(name: "Expect", value: "")] {
            let forbidden: (UInt8) -> Bool = { $0 == 0x0D || $0 == 0x0A || $0 == 0 }
            guard !name.isEmpty, !name.utf8.contains(where: { forbidden($0) || $0 == 0x3A }), !value.utf8.contains(where: forbidden) else {
                throw CurlError(kind: .invalidRequest, message: "header \(name) has a forbidden character")
            }
            requestHeaders = curl_slist_append(requestHeaders, "\(name): \(value)")
        }
        try check(orchard_curl_easy_setopt_slist(easy, CURLOPT_HTTPHEADER, requestHeaders))

        let me = Unmanaged.passUnretained(self).toOpaque()
        try check(orchard_curl_easy_setopt_write_callback(easy, bodyCallback, me))
        try check(orchard_curl_easy_setopt_header_callback(easy, headerCallback, me))
    }

    private func configure(_ identity: TLSIdentity) throws(CurlError) {
        switch identity.storage {
        case .pemFiles(let certificate, let key):
            try set(CURLOPT_SSLCERTTYPE, "PEM")
            try set(CURLOPT_SSLCERT, certificate)
            try set(CURLOPT_SSLKEYTYPE, "PEM")
            try set(CURLOPT_SSLKEY, key)
        case .pemBytes(let certificate, let key):
            try set(CURLOPT_SSLCERTTYPE, "PEM")
            try setBlob(CURLOPT_SSLCERT_BLOB, certificate)
            try set(CURLOPT_SSLKEYTYPE, "PEM")
            try setBlob(CURLOPT_SSLKEY_BLOB, key)
        case .pkcs12File(let path):
            try set(CURLOPT_SSLCERTTYPE, "P12")
            try set(CURLOPT_SSLCERT, path)
        case .pkcs12Bytes(let bytes):
            try set(CURLOPT_SSLCERTTYPE, "P12")
            try setBlob(CURLOPT_SSLCERT_BLOB, bytes)
        }
        if let passphrase = identity.passphrase {
            try set(CURLOPT_KEYPASSWD, passphrase)
        }
    }

    private func set(_ option: CURLoption, _ value: Int) throws(CurlError) {
        try check(orchard_curl_easy_setopt_long(easy, option, value))
    }

    private func set(_ option: CURLoption, _ value: String) throws(CurlError) {
        // String options are copied by libcurl.
        try check(orchard_curl_easy_setopt_string(easy, option, value))
    }

    private func setBlob(_ option: CURLoption, _ bytes: [UInt8]) throws(CurlError) {
        let code = bytes.withUnsafeBytes { raw in
            orchard_curl_easy_setopt_blob(easy, option, raw.baseAddress, raw.count)
        }
        try check(code)
    }

    private func check(_ code: CURLcode) throws(CurlError) {
        guard code != CURLE_OK else { return }
        let message = String(cString: curl_easy_strerror(code))
        throw CurlError(kind: .invalidRequest, curlCode: Int32(code.rawValue), message: "cannot set option: \(message)")
    }

    // MARK: Engine-thread side

    fileprivate func receiveBody(_ data: UnsafeMutablePointer<CChar>?, _ count: Int) -> Int {
        guard let data, count > 0 else { return 0 }
        guard body.count + count <= maxResponseBytes else {
            tooLarge = true
            return 0  // makes libcurl abort with CURLE_WRITE_ERROR
        }
        data.withMemoryRebound(to: UInt8.self, capacity: count) { body.append(contentsOf: UnsafeBufferPointer(start: $0, count: count)) }
        return count
    }

    fileprivate func receiveHeader(_ data: UnsafeMutablePointer<CChar>?, _ count: Int) -> Int {
        guard let data, count > 0 else { return count }
        let line = data.withMemoryRebound(to: UInt8.self, capacity: count) {
            String(decoding: UnsafeBufferPointer(start: $0, count: count), as: UTF8.self)
        }
        if line.hasPrefix("HTTP/") {
            headers.removeAll()  // a new response (after a 100 Continue, say) starts over
        } else if let colon = line.firstIndex(of: ":") {
            let name = String(line[..<colon])
            let value = line[line.index(after: colon)...].trimmingWhitespace()
            headers.append((name: name, value: value))
        }
        return count
    }

    /// CURLINFO_HTTP_VERSION's constant as a number.
    static func httpVersion(_ constant: Int) -> Int {
        switch constant {
        case Int(CURL_HTTP_VERSION_1_0), Int(CURL_HTTP_VERSION_1_1): 1
        case Int(CURL_HTTP_VERSION_2_0): 2
        case 30: 3  // CURL_HTTP_VERSION_3
        default: 0
        }
    }

    /// Builds the outcome once libcurl reports the transfer done.
    func outcome(for code: CURLcode) -> (Result<CurlResponse, CurlError>, newConnections: Int) {
        var connects = 0
        _ = orchard_curl_easy_getinfo_long(easy, CURLINFO_NUM_CONNECTS, &connects)
        guard code == CURLE_OK else {
            let curlCode = Int32(code.rawValue)
            let detail = String(cString: errorBuffer)
            let message = detail.isEmpty ? String(cString: curl_easy_strerror(code)) : detail
            if let refused = refusedDestination(curlCode: curlCode) { return (.failure(refused), connects) }
            if tooLarge || code == CURLE_FILESIZE_EXCEEDED {
                return (
                    .failure(CurlError(kind: .responseTooLarge, curlCode: curlCode, message: "response exceeds \(maxResponseBytes) bytes")),
                    connects
                )
            }
            return (.failure(CurlError(kind: CurlError.kind(forCurlCode: curlCode), curlCode: curlCode, message: message)), connects)
        }
        var status = 0
        _ = orchard_curl_easy_getinfo_long(easy, CURLINFO_RESPONSE_CODE, &status)
        var version = 0
        _ = orchard_curl_easy_getinfo_long(easy, CURLINFO_HTTP_VERSION, &version)
        var response = CurlResponse(status: status, headers: headers, body: body, newConnections: connects)
        response.httpVersion = Self.httpVersion(version)
        if readsPeerCertificates { response.peerCertificates = peerCertificates() }
        return (.success(response), connects)
    }

    /// The PEM of each certificate libcurl recorded from the handshake (CURLINFO_CERTINFO's `Cert:`
    /// entries, OpenSSL's backend), in the order the server sent them.
    private func peerCertificates() -> [String] {
        var raw: UnsafeMutableRawPointer?
        guard orchard_curl_easy_getinfo_pointer(easy, CURLINFO_CERTINFO, &raw) == CURLE_OK, let raw else { return [] }
        let info = raw.assumingMemoryBound(to: curl_certinfo.self).pointee
        guard info.num_of_certs > 0, let lists = info.certinfo else { return [] }
        var certificates: [String] = []
        for index in 0..<Int(info.num_of_certs) {
            var entry = lists[index]
            while let node = entry {
                if let data = node.pointee.data {
                    let text = String(cString: data)
                    if text.hasPrefix("Cert:") { certificates.append(String(text.dropFirst(5))) }
                }
                entry = node.pointee.next
            }
        }
        return certificates
    }

    /// Resumes the waiting task exactly once.
    func finish(_ result: Result<CurlResponse, CurlError>) {
        continuation?.resume(returning: result)
        continuation = nil
    }
}

private let bodyCallback: orchard_curl_write_callback = { data, size, count, userdata in
    Unmanaged<Transfer>.fromOpaque(userdata!).takeUnretainedValue().receiveBody(data, size * count)
}

private let headerCallback: orchard_curl_write_callback = { data, size, count, userdata in
    Unmanaged<Transfer>.fromOpaque(userdata!).takeUnretainedValue().receiveHeader(data, size * count)
}

extension StringProtocol {
    func trimmingWhitespace() -> String {
        var text = Substring(self)
        while let first = text.first, first.isWhitespace { text.removeFirst() }
        while let last = text.last, last.isWhitespace { text.removeLast() }
        return String(text)
    }
}
