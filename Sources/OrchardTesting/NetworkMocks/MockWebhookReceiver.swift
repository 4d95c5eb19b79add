import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import OrchardCore
import Synchronization

/// A shop's webhook endpoint on loopback http: records every delivery, verifies its signature
/// as a shop would, answers the status it is told to, and can go down and come back on the
/// same port.
public final class MockWebhookReceiver: Sendable {
    /// One request as received.
    public struct Delivery: Sendable {
        public var eventId: String
        public var type: String
        public var signature: String
        public var body: [UInt8]
        public var status: Int
        /// Whether the signature held (secret, and a timestamp within five minutes) when it arrived.
        public var verified: Bool
        /// The Standard Webhooks headers (`webhook-id`, `webhook-timestamp`, `webhook-signature`), as received.
        public var standard: [String: String] = [:]
        /// The W3C trace headers (`traceparent`, `tracestate`), each as received when sent once;
        /// a repeated one is kept with its values joined by a comma.
        public var trace: [String: String] = [:]

        /// Whether the Standard Webhooks signature holds for `secret` at `now`.
        public func standardVerified(with secret: Secret, now: Date = Date()) -> Bool {
            StandardWebhookSignature.verify(
                id: standard[StandardWebhookSignature.idHeader] ?? "", timestamp: standard[StandardWebhookSignature.timestampHeader] ?? "",
                signature: standard[StandardWebhookSignature.signatureHeader] ?? "", body: body, secret: secret, now: now)
        }

        public var json: [String: Any]? { try? JSONSerialization.jsonObject(with: Data(body)) as? [String: Any] }
    }

    public let secret: Secret
    private let channels = ChannelTracker()
    private let state = Mutex<(deliveries: [Delivery], status: Int, body: [UInt8], delay: Duration, port: Int, location: String?)>(
        ([], 200, [], .zero, 0, nil))
    /// While down, every connection is closed unanswered; the port stays bound, so nothing else can take it meanwhile.
    private let down = Atomic<Bool>(false)

    public init(secret: String) {
        self.secret = Secret(secret)
    }

    public var port: Int { state.withLock { $0.port } }
    public var url: String { "http://127.0.0.1:\(port)/orchard/webhooks" }
    public var deliveries: [Delivery] { state.withLock { $0.deliveries } }
    /// Deliveries answered 2xx: what the shop acted on.
    public var accepted: [Delivery] { deliveries.filter { (200..<300).contains($0.status) } }

    /// The status (and body, after `delay`) every later request gets: a quote URL answers JSON;
    /// `location` adds that header (a redirect, which Orchard must not follow).
    public func answer(_ status: Int, body: String = "", delay: Duration = .zero, location: String? = nil) {
        state.withLock {
            $0.status = status
            $0.body = Array(body.utf8)
            $0.delay = delay
            $0.location = location
        }
    }

    /// Listens on `port` (0: a free one, then the same one on every later start).
    @discardableResult
    public func start() async throws -> Int {
        let port = try await channels.listen(host: "127.0.0.1", port: state.withLock { $0.port }) { [self] channel in
            if isDown {
                channel.close(promise: nil)
                return
            }
            try channel.pipeline.syncOperations.configureHTTPServerPipeline(withErrorHandling: true)
            try channel.pipeline.syncOperations.addHandler(WebhookReceiverHandler(receiver: self))
        }
        state.withLock { $0.port = port }
        return port
    }

    /// Stops listening and drops every connection (the end of a test).
    public func stop() async {
        await channels.closeAll()
    }

    /// Goes down: every connection, open or new, is closed without an answer until ``comeBack()``.
    public func goDown() async {
        down.store(true, ordering: .sequentiallyConsistent)
        await channels.closeConnections()
    }

    /// Answers again.
    public func comeBack() {
        down.store(false, ordering: .sequentiallyConsistent)
    }

    var isDown: Bool { down.load(ordering: .sequentiallyConsistent) }

    /// Records a request and returns the answer: status, body and delay.
    func receive(headers: HTTPHeaders, body: [UInt8]) -> (status: Int, body: [UInt8], delay: Duration, location: String?) {
        let signature = headers[WebhookSignature.header].first ?? ""
        let verified = WebhookSignature.verify(header: signature, body: body, secret: secret, now: Date())
        var standard: [String: String] = [:]
        for name in [StandardWebhookSignature.idHeader, StandardWebhookSignature.timestampHeader, StandardWebhookSignature.signatureHeader]
        {
            standard[name] = headers[name].first
        }
        var trace: [String: String] = [:]
        for name in ["traceparent", "tracestate"] where headers.contains(name: name) {
            trace[name] = headers[name].joined(separator: ",")
        }
        return state.withLock { state in
            state.deliveries.append(
                Delivery(
                    eventId: headers["Orchard-Event-Id"].first ?? "", type: headers["Orchard-Event-Type"].first ?? "",
                    signature: signature, body: body, status: state.status, verified: verified, standard: standard,
                    trace: trace))
            return (state.status, state.body, state.delay, state.location)
        }
    }

    /// The deliveries once `condition` holds on them (or as they are when ``Eventually/patience`` runs out).
    public func wait(until condition: @Sendable ([Delivery]) -> Bool) async throws -> [Delivery] {
        try await Eventually.value { () -> [Delivery]? in
            let seen = deliveries
            return condition(seen) ? seen : nil
        } ?? deliveries
    }
}

final class WebhookReceiverHandler: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    let receiver: MockWebhookReceiver
    private var collector = RequestCollector(limit: 256 * 1024)

    init(receiver: MockWebhookReceiver) { self.receiver = receiver }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard let (head, body, _) = collector.consume(unwrapInboundIn(data)) else { return }
        let answer = head.method == .POST ? receiver.receive(headers: head.headers, body: body) : (405, [], .zero, nil)
        let respond = { [self] in
            var headers = HTTPHeaders()
            headers.add(name: "Content-Length", value: String(answer.body.count))
            headers.add(name: "Content-Type", value: "application/json")
            if let location = answer.location { headers.add(name: "Location", value: location) }
            context.write(
                wrapOutboundOut(.head(HTTPResponseHead(version: head.version, status: .init(statusCode: answer.status), headers: headers))),
                promise: nil)
            context.write(wrapOutboundOut(.body(.byteBuffer(context.channel.allocator.buffer(bytes: answer.body)))), promise: nil)
            context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
        }
        if answer.delay > .zero {
            let (seconds, attoseconds) = answer.delay.components
            context.eventLoop.assumeIsolated().scheduleTask(in: .nanoseconds(seconds * 1_000_000_000 + attoseconds / 1_000_000_000)) {
                respond()
            }
        } else {
            respond()
        }
    }
}
