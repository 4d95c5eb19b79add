import Foundation
import Logging
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
import Synchronization

/// A shop's web server on loopback HTTPS, as Apple sees it when it fetches a domain's
/// association file: per Host, the file, a redirect or an error status.
public final class MockDomainHost: Sendable {
    /// What a domain answers at `/.well-known/apple-developer-merchantid-domain-association`.
    public enum Page: Sendable {
        case file([UInt8], contentType: String)
        case redirect(String)
        case status(Int)
    }

    public static let path = "/.well-known/apple-developer-merchantid-domain-association"

    private let sslContext: NIOSSLContext
    private let pages: Mutex<[String: Page]>
    private let channels = ChannelTracker()

    /// - Parameter serverIdentity: a loopback server certificate (the test PKI's).
    public init(serverIdentity: TestCertificate, pages: [String: Page]) throws {
        let tls = TLSConfiguration.makeServerConfiguration(
            certificateChain: [.certificate(try NIOSSLCertificate(bytes: Array(serverIdentity.certificatePEM.utf8), format: .pem))],
            privateKey: .privateKey(try NIOSSLPrivateKey(bytes: Array(serverIdentity.keyPEM.utf8), format: .pem)))
        sslContext = try NIOSSLContext(configuration: tls)
        self.pages = Mutex(pages)
    }

    public var port: Int { channels.port }

    func page(forHost host: String) -> Page {
        let name = host.split(separator: ":").first.map { $0.lowercased() } ?? ""
        return pages.withLock { $0[name] } ?? .status(404)
    }

    @discardableResult
    public func start() async throws -> Int {
        try await channels.listen(host: "127.0.0.1", port: 0) { [self] channel in
            let sync = channel.pipeline.syncOperations
            try sync.addHandler(NIOSSLServerHandler(context: sslContext))
            try sync.configureHTTPServerPipeline(withErrorHandling: true)
            try sync.addHandler(MockDomainHandler(host: self))
        }
    }

    public func stop() async {
        await channels.closeAll()
    }
}

final class MockDomainHandler: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    let host: MockDomainHost
    private var collector = RequestCollector(limit: 16 * 1024)

    init(host: MockDomainHost) { self.host = host }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard let (head, _, _) = collector.consume(unwrapInboundIn(data)) else { return }
        var headers = HTTPHeaders()
        var status = 404
        var body: [UInt8] = []
        if head.method == .GET, head.uri == MockDomainHost.path {
            switch host.page(forHost: head.headers["Host"].first ?? "") {
            case .file(let bytes, let contentType):
                (status, body) = (200, bytes)
                headers.add(name: "Content-Type", value: contentType)
            case .redirect(let location):
                status = 301
                headers.add(name: "Location", value: location)
            case .status(let code):
                status = code
            }
        }
        headers.add(name: "Content-Length", value: String(body.count))
        context.write(
            wrapOutboundOut(.head(HTTPResponseHead(version: head.version, status: .init(statusCode: status), headers: headers))),
            promise: nil)
        context.write(wrapOutboundOut(.body(.byteBuffer(context.channel.allocator.buffer(bytes: body)))), promise: nil)
        context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
    }
}
