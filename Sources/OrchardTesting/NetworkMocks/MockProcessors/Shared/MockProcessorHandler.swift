import Foundation
import NIOCore
import NIOHTTP1

/// Reads a request, asks ``MockProcessors`` and answers, delays or drops the connection.
final class MockProcessorHandler: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    let mock: MockProcessors
    let reset: ConnectionResetHandler
    private var collector = RequestCollector(limit: 256 * 1024)

    init(mock: MockProcessors, reset: ConnectionResetHandler) {
        self.mock = mock
        self.reset = reset
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard let (head, body, tooLarge) = collector.consume(unwrapInboundIn(data)) else { return }
        guard !tooLarge else { return respond(413, MockProcessors.body(["message": "the body is too large"]), [], head, context) }
        let components = URLComponents(string: head.uri)
        let query = (components?.queryItems ?? []).reduce(into: [String: String]()) { $0[$1.name] = $1.value ?? "" }
        let request = MockProcessorRequest(
            method: head.method.rawValue, path: String(head.uri.split(separator: "?").first ?? ""),
            headers: head.headers.map { (name: $0.name, value: $0.value) }, body: body, query: query)
        switch mock.handle(request) {
        case .answer(let status, let body, let headers):
            respond(status, body, headers, head, context)
        case .drop:
            reset.reset()
        case .unanswered:
            break
        case .delayed(let duration, let status, let body):
            context.eventLoop.assumeIsolated().scheduleTask(in: TimeAmount(duration)) {
                self.respond(status, body, [], head, context)
            }
        case .awaiting(let status, let body):
            let loop = context.eventLoop
            let bound = NIOLoopBound((handler: self, context: context), eventLoop: loop)
            mock.keepBack {
                loop.execute { bound.value.handler.respond(status, body, [], head, bound.value.context) }
            }
        }
    }

    private func respond(
        _ status: Int, _ body: [UInt8], _ extra: [(String, String)], _ request: HTTPRequestHead, _ context: ChannelHandlerContext
    ) {
        guard context.channel.isActive else { return }
        var headers = HTTPHeaders()
        headers.add(name: "Content-Type", value: "application/json")
        headers.add(name: "Content-Length", value: String(body.count))
        for (name, value) in extra { headers.add(name: name, value: value) }
        context.write(
            wrapOutboundOut(.head(HTTPResponseHead(version: request.version, status: .init(statusCode: status), headers: headers))),
            promise: nil)
        context.write(wrapOutboundOut(.body(.byteBuffer(context.channel.allocator.buffer(bytes: body)))), promise: nil)
        context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
    }
}
