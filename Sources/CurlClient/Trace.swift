import CCurlShims

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

extension CurlHTTPClient {
    /// ``execute(_:)`` with libcurl's verbose trace appended to the file at `path`: what it
    /// connected to and which CA file and folder it loaded (tests check trust replaces the system's).
    func execute(_ request: CurlRequest, tracingTo path: String) async throws(CurlError) -> CurlResponse {
        guard let file = fopen(path, "a") else { throw CurlError(kind: .other, message: "cannot open \(path)") }
        defer { fclose(file) }
        return try await execute(request) { easy throws(CurlError) in
            guard orchard_curl_easy_setopt_long(easy, CURLOPT_VERBOSE, 1) == CURLE_OK,
                orchard_curl_easy_setopt_pointer(easy, CURLOPT_STDERR, UnsafeMutableRawPointer(file)) == CURLE_OK
            else { throw CurlError(kind: .other, message: "cannot turn on libcurl's trace") }
        }
    }
}
