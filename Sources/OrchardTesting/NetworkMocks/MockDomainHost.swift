import Foundation
import Logging
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
import SwiftASN1
import Synchronization
import X509

/// A shop's web server on loopback HTTPS, as Apple sees it when it fetches a domain's
/// association file: per Host, the file, a redirect, an error status or any other answer.
///
/// A test changes it while it runs: ``setPage(_:for:)`` swaps what a domain answers (the next
/// request sees it), ``setServerIdentity(_:)`` the certificate the server presents (every new
/// connection presents the new one; open ones keep theirs), so a break and its repair both show.
public final class MockDomainHost: Sendable {
    /// What a domain answers at `/.well-known/apple-developer-merchantid-domain-association`.
    public enum Page: Sendable {
        /// 200 with these bytes.
        case file([UInt8], contentType: String)
        /// 301 to this location.
        case redirect(String)
        /// This status with an empty body.
        case status(Int)
        /// Any answer: a 302 or 307 with its Location, a 403 from a WAF with its HTML page.
        case response(status: Int, headers: [(name: String, value: String)], body: [UInt8])
    }

    public static let path = "/.well-known/apple-developer-merchantid-domain-association"

    private struct State {
        var pages: [String: Page]
        var sslContext: NIOSSLContext
        var served = 0
    }

    private let state: Mutex<State>
    private let channels = ChannelTracker()

    /// - Parameters:
    ///   - serverIdentity: the certificate the server presents (the test PKI's: for loopback, or
    ///     for the domains it serves, as a client connecting for a domain checks).
    ///   - chain: certificates sent after it in the handshake (an intermediate, the CA).
    public init(serverIdentity: TestCertificate, chain: [Certificate] = [], pages: [String: Page]) throws {
        state = Mutex(State(pages: Self.lowercased(pages), sslContext: try Self.context(serverIdentity, chain: chain)))
    }

    public var port: Int { channels.port }

    /// How many requests for the association file the host has answered.
    public var served: Int { state.withLock { $0.served } }

    /// What `domain` answers from the next request on; nil: 404, as for a domain it does not serve.
    public func setPage(_ page: Page?, for domain: String) {
        state.withLock { $0.pages[domain.lowercased()] = page }
    }

    /// Presents `identity` on every connection made from now on; connections already open keep theirs.
    public func setServerIdentity(_ identity: TestCertificate, chain: [Certificate] = []) throws {
        let context = try Self.context(identity, chain: chain)
        state.withLock { $0.sslContext = context }
    }

    /// Closes the connections open now (clients reconnect and see the current certificate).
    public func closeConnections() async {
        await channels.closeConnections()
    }

    func answer(forHost host: String) -> Page {
        let name = host.split(separator: ":").first.map { $0.lowercased() } ?? ""
        return state.withLock { state in
            state.served += 1
            return state.pages[name] ?? .status(404)
        }
    }

    @discardableResult
    public func start() async throws -> Int {
        try await channels.listen(host: "127.0.0.1", port: 0) { [self] channel in
            let sync = channel.pipeline.syncOperations
            try sync.addHandler(NIOSSLServerHandler(context: state.withLock { $0.sslContext }))
            try sync.configureHTTPServerPipeline(withErrorHandling: true)
            try sync.addHandler(MockDomainHandler(host: self))
        }
    }

    public func stop() async {
        await channels.closeAll()
    }

    private static func context(_ identity: TestCertificate, chain: [Certificate]) throws -> NIOSSLContext {
        let certificates = [identity.certificate] + chain
        let tls = TLSConfiguration.makeServerConfiguration(
            certificateChain: try certificates.map {
                .certificate(try NIOSSLCertificate(bytes: Array(try $0.serializeAsPEM().pemString.utf8), format: .pem))
            },
            privateKey: .privateKey(try NIOSSLPrivateKey(bytes: Array(identity.keyPEM.utf8), format: .pem)))
        return try NIOSSLContext(configuration: tls)
    }

    private static func lowercased(_ pages: [String: Page]) -> [String: Page] {
        Dictionary(pages.map { ($0.key.lowercased(), $0.value) }, uniquingKeysWith: { _, last in last })
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
            switch host.answer(forHost: head.headers["Host"].first ?? "") {
            case .file(let bytes, let contentType):
                (status, body) = (200, bytes)
                headers.add(name: "Content-Type", value: contentType)
            case .redirect(let location):
                status = 301
                headers.add(name: "Location", value: location)
            case .status(let code):
                status = code
            case .response(let code, let fields, let bytes):
                (status, body) = (code, bytes)
                for field in fields { headers.add(name: field.name, value: field.value) }
            }
        }
        headers.replaceOrAdd(name: "Content-Length", value: String(body.count))
        context.write(
            wrapOutboundOut(.head(HTTPResponseHead(version: head.version, status: .init(statusCode: status), headers: headers))),
            promise: nil)
        context.write(wrapOutboundOut(.body(.byteBuffer(context.channel.allocator.buffer(bytes: body)))), promise: nil)
        context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
    }
}
