import ApplePay
import Crypto
import Foundation
import HTTPTypes
import Hummingbird

/// Serves the checkout page's files. Routes come first, as with Hummingbird's `FileMiddleware`;
/// on a route's 404, a GET or HEAD for a file the cache holds is answered from memory with
/// headers made once (ETag from the bytes, Last-Modified, a 304 when the client holds that
/// version, one byte range); anything else (a folder without its slash, an encoded path, a
/// file too large to cache) goes to the wrapped `FileMiddleware` as before.
struct StaticFilesMiddleware<Context: RequestContext, Provider: FileProvider>: RouterMiddleware
where Provider.FileAttributes: FileMiddlewareFileAttributes {
    let cache: StaticFileCache
    let fallback: FileMiddleware<Context, Provider>

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        do {
            return try await next(request, context)
        } catch let error as any HTTPResponseError where error.status == .notFound {
            guard request.method == .get || request.method == .head else { throw error }
            let path = request.uri.path
            if let file = cache.file(at: path) { return file.response(to: request) }
            // A path the files did not have a moment ago is a 404 again without asking the disk.
            if cache.isMissing(path) { throw error }
            do {
                return try await fallback.handle(request, context: context) { _, _ in throw error }
            } catch let missing as any HTTPResponseError where missing.status == .notFound {
                cache.noteMissing(path)
                throw missing
            }
        }
    }
}

/// One file ready to send: its bytes and the headers every answer about it carries.
struct StaticFile: Sendable {
    let body: ByteBuffer
    let etag: String
    let lastModified: String
    let modified: Date
    /// Content-Type, ETag, Last-Modified and Accept-Ranges, built and checked once.
    let headers: HTTPFields
    /// The same and the whole file's Content-Length: a 200 sends these as they are.
    let wholeFileHeaders: HTTPFields

    init(bytes: [UInt8], name: String, modified: Date) {
        body = ByteBuffer(bytes: bytes)
        // Strong: the same bytes always give the same tag, whichever build or copy serves them.
        etag = "\"" + Hex.encode(Array(SHA256.hash(data: bytes)).prefix(16)) + "\""
        self.modified = Date(timeIntervalSince1970: modified.timeIntervalSince1970.rounded(.down))
        lastModified = HTTPDate.format(self.modified)
        var headers = HTTPFields()
        let fileExtension = name.split(separator: "/").last.flatMap { $0.contains(".") ? $0.split(separator: ".").last : nil }
        if let fileExtension, let type = MediaType.getMediaType(forExtension: String(fileExtension)) {
            headers[.contentType] = type.description
        }
        headers[.eTag] = etag
        headers[.lastModified] = lastModified
        headers[.acceptRanges] = "bytes"
        self.headers = headers
        headers[.contentLength] = String(bytes.count)
        wholeFileHeaders = headers
    }

    /// 304 when the client's copy is this one, 206 for one satisfiable range, else 200.
    func response(to request: Request) -> Response {
        if isNotModified(request) {
            return Response(status: .notModified, headers: headers)
        }
        let size = body.readableBytes
        if request.method == .get, let range = request.headers[.range], rangeApplies(request) {
            var headers = self.headers
            switch ByteRange(range, size: size) {
            case .some(.satisfiable(let bounds)):
                headers[.contentRange] = "bytes \(bounds.lowerBound)-\(bounds.upperBound)/\(size)"
                headers[.contentLength] = String(bounds.count)
                let part = body.getSlice(at: bounds.lowerBound, length: bounds.count) ?? ByteBuffer()
                return Response(status: .partialContent, headers: headers, body: ResponseBody(byteBuffer: part))
            case .some(.unsatisfiable):
                return Response(status: .rangeNotSatisfiable, headers: [.contentRange: "bytes */\(size)"])
            case nil:
                break  // a form this server does not split (several ranges, other units): the whole file
            }
        }
        return Response(
            status: .ok, headers: wholeFileHeaders, body: ResponseBody(byteBuffer: request.method == .head ? ByteBuffer() : body))
    }

    /// If-None-Match decides when present (RFC 9110 §13.1.2); otherwise If-Modified-Since.
    private func isNotModified(_ request: Request) -> Bool {
        if let tags = request.headers[.ifNoneMatch] {
            if tags == etag { return true }  // what a browser sends back
            return tags.split(separator: ",").contains { tag in
                let tag = tag.trimmingCharacters(in: .whitespaces)
                return tag == "*" || tag == etag || tag == "W/" + etag
            }
        }
        guard let since = request.headers[.ifModifiedSince] else { return false }
        if since == lastModified { return true }
        return HTTPDate.parse(since).map { modified <= $0 } ?? false
    }

    /// If-Range names this version (or there is none): otherwise the whole file is sent.
    private func rangeApplies(_ request: Request) -> Bool {
        guard let condition = request.headers[.ifRange] else { return true }
        return condition == etag || condition == lastModified
    }
}

/// A `Range: bytes=…` header against a file of `size` bytes: one range, or nil for any other form.
enum ByteRange: Equatable {
    case satisfiable(ClosedRange<Int>)
    case unsatisfiable

    init?(_ header: String, size: Int) {
        guard header.hasPrefix("bytes="), !header.contains(",") else { return nil }
        let spec = header.dropFirst("bytes=".count).trimmingCharacters(in: .whitespaces)
        let parts = spec.split(separator: "-", maxSplits: 1, omittingEmptySubsequences: false)
        guard parts.count == 2 else { return nil }
        let first = Int(parts[0])
        let last = Int(parts[1])
        switch (parts[0].isEmpty, parts[1].isEmpty) {
        case (false, _):
            guard let first, first >= 0, parts[1].isEmpty || last != nil else { return nil }
            guard first < size else {
                self = .unsatisfiable
                return
            }
            let end = min(last ?? size - 1, size - 1)
            guard end >= first else { return nil }
            self = .satisfiable(first...end)
        case (true, false):
            // The last N bytes.
            guard let last, last >= 0 else { return nil }
            guard last > 0, size > 0 else {
                self = .unsatisfiable
                return
            }
            self = .satisfiable(max(0, size - last)...(size - 1))
        case (true, true):
            return nil
        }
    }
}

/// HTTP dates (RFC 9110 IMF-fixdate), for Last-Modified and If-Modified-Since.
enum HTTPDate {
    static func formatter() -> DateFormatter {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        return formatter
    }

    static func format(_ date: Date) -> String { formatter().string(from: date) }
    static func parse(_ text: String) -> Date? { formatter().date(from: text) }
}
