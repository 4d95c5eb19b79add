import CurlClient
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import NIOEmbedded
import OrchardServer
import Synchronization

/// Answers requests with the application's router in this process, as Hummingbird's router tests
/// do, with no socket: what most of the server's tests need, since the routes, middleware and
/// error mapping are the same. Unlike `app.test(.router)` it keeps the request's `Host` (the
/// merchant is chosen by it) and gives each request a loopback peer, as the live tests' client has.
public struct RouterTransport: Sendable {
    public let responder: RouterResponder<OrchardRequestContext>
    public let logger: Logger

    public init(_ router: Router<OrchardRequestContext>, logger: Logger) {
        responder = router.buildResponder()
        self.logger = logger
    }

    /// `method path` on `host`, answered as the HTTP server would answer it; an error no middleware
    /// turned into a response is a bare 500, as the server sends.
    public func send(_ method: String, _ path: String, host: String, headers: [(name: String, value: String)], body: [UInt8]?)
        async throws -> CurlResponse
    {
        var fields = HTTPFields()
        for header in headers where header.name.lowercased() != "host" {
            guard let name = HTTPField.Name(header.name) else { throw RouterTransportError.badHeader(header.name) }
            fields.append(HTTPField(name: name, value: header.value))
        }
        if let body { fields[.contentLength] = String(body.count) }
        guard let requestMethod = HTTPRequest.Method(method) else { throw RouterTransportError.badMethod(method) }
        let request = Request(
            head: HTTPRequest(method: requestMethod, scheme: "http", authority: host, path: path, headerFields: fields),
            body: RequestBody(buffer: ByteBuffer(bytes: body ?? [])))
        let channel = NIOAsyncTestingChannel()
        channel.remoteAddress = try SocketAddress(ipAddress: "127.0.0.1", port: 40000)
        let context = OrchardRequestContext(source: ApplicationRequestContextSource(channel: channel, logger: logger))
        let response: Response
        do {
            response = try await responder.respond(to: request, context: context)
        } catch let error as any HTTPResponseError {
            response = try error.response(from: request, context: context)
        } catch {
            response = Response(status: .internalServerError)
        }
        let collected = Collected()
        try await response.body.write(CollectingWriter(collected: collected))
        let bytes = collected.bytes.withLock { $0 }
        var responseHeaders = response.headers.map { (name: $0.name.rawName, value: $0.value) }
        if response.headers[.contentLength] == nil, response.body.contentLength == nil || response.body.contentLength == bytes.count {
            responseHeaders.append((name: "Content-Length", value: String(bytes.count)))
        }
        return CurlResponse(status: response.status.code, headers: responseHeaders, body: method == "HEAD" ? [] : bytes)
    }
}

public enum RouterTransportError: Error {
    case badHeader(String)
    case badMethod(String)
}

/// A response's body as the server would write it.
private final class Collected: Sendable {
    public let bytes = Mutex<[UInt8]>([])
}

private struct CollectingWriter: ResponseBodyWriter {
    public let collected: Collected

    mutating func write(_ buffer: ByteBuffer) async throws {
        collected.bytes.withLock { $0 += buffer.readableBytesView }
    }

    consuming func finish(_ trailingHeaders: HTTPFields?) async throws {}
}
