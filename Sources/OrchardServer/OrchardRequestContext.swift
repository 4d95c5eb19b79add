import ApplePay
import Foundation
import Hummingbird
import Logging
import NIOCore
import OrchardCore
import OrchardServices

/// Orchard's request context: the merchant serving the request's Host, resolved once by
/// ``MerchantMiddleware``, and the body limit its JSON decoder keeps.
public struct OrchardRequestContext: RequestContext, EventLoopBound {
    public var coreContext: CoreRequestContextStorage
    /// The merchant whose domain the Host names (port ignored), and that domain; nil for an unknown host.
    public var merchant: MerchantConfiguration?
    public var domain: String?
    /// The merchant whose secret API key authenticated a `/v1/` request.
    public var apiMerchant: MerchantConfiguration?
    /// The largest JSON body `request.decode(as:context:)` reads (`server.maxBodyBytes`).
    public var maxBodyBytes = 16 * 1024
    /// The socket's peer: the client, or the reverse proxy in front.
    public let peerAddress: IPAddress?
    /// The client as ``ClientAddressMiddleware`` resolved it (the peer unless that is a trusted proxy).
    public var clientAddress: IPAddress?
    /// The connection's event loop (``EventLoopExecutorMiddleware``).
    public let eventLoop: any EventLoop

    public init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        peerAddress = source.channel.remoteAddress?.ipAddress.flatMap { IPAddress($0) }
        clientAddress = peerAddress
        eventLoop = source.channel.eventLoop
        // A request's log lines are told apart by their trace_id and span_id instead: Hummingbird's
        // hb.request.id counts up in hexadecimal, and a run of 13+ decimal digits in it reads as a
        // card number to the log scanners merchants run for card data (the API fuzzing's check found one).
        logger[metadataKey: "hb.request.id"] = nil
    }

    public var requestDecoder: OrchardRequestDecoder { OrchardRequestDecoder() }
    public var responseEncoder: OrchardResponseEncoder { OrchardResponseEncoder() }

    /// The merchant a `/v1/` call acts for; set by ``APIKeyMiddleware`` on every `/v1/` route.
    public func requireAPIMerchant() throws(OrchardError) -> MerchantConfiguration {
        guard let apiMerchant else { throw OrchardError(.unauthorized, "the payments API needs Authorization: Bearer <secret API key>") }
        return apiMerchant
    }

    /// The merchant serving this Host; an unknown host is a 421, here and nowhere else.
    public func requireMerchant() throws(OrchardError) -> (merchant: MerchantConfiguration, domain: String) {
        guard let merchant, let domain else { throw OrchardError(.unknownHost, "this host is not configured for Apple Pay") }
        return (merchant, domain)
    }
}

/// Resolves the Host to a merchant (configured or registered) before any route runs.
struct MerchantMiddleware: RouterMiddleware {
    let directory: MerchantDirectory
    let maxBodyBytes: Int

    func handle(
        _ request: Request, context: OrchardRequestContext,
        next: (Request, OrchardRequestContext) async throws -> Response
    ) async throws -> Response {
        var context = context
        context.maxBodyBytes = maxBodyBytes
        if let (merchant, domain) = directory.merchant(forHost: request.head.authority) {
            context.merchant = merchant
            context.domain = domain
        }
        return try await next(request, context)
    }
}

/// JSON bodies up to the context's limit (413 past it); anything else that does not decode is a
/// 400 naming what is wrong, in Orchard's error shape.
public struct OrchardRequestDecoder: RequestDecoder {
    public func decode<T: Decodable>(_ type: T.Type, from request: Request, context: some RequestContext) async throws -> T {
        let limit = (context as? OrchardRequestContext)?.maxBodyBytes ?? 16 * 1024
        let bytes = try await readBody(request, limit: limit)
        do {
            return try JSONDecoder().decode(T.self, from: Data(bytes))
        } catch {
            throw OrchardError(.invalidJSON, "the body is not the JSON this endpoint expects (\(DecodingErrorText.describe(error)))")
        }
    }
}

/// Every JSON answer the same way: sorted keys, unescaped slashes, ISO 8601 dates, never cached.
/// Controllers return `ResponseEncodable` values (in an `EditedResponse` for another status).
public struct OrchardResponseEncoder: ResponseEncoder {
    public func encode(_ value: some Encodable, from request: Request, context: some RequestContext) throws -> Response {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .iso8601
        return Response(
            status: .ok, headers: [.contentType: "application/json", .cacheControl: "no-store"],
            body: ResponseBody(byteBuffer: ByteBuffer(bytes: try encoder.encode(value))))
    }
}

/// Answers whose types live in other targets, sent as JSON through ``OrchardResponseEncoder``.
extension ApplePayUpdate: ResponseEncodable {}
extension PaymentRecord: ResponseEncodable {}
extension RegisteredMerchant: ResponseEncodable {}
extension PaymentToken: ResponseEncodable {}

/// Reads a request body up to `limit` bytes; larger bodies are a 413.
func readBody(_ request: Request, limit: Int) async throws -> [UInt8] {
    if let length = request.headers[.contentLength].flatMap(Int.init), length > limit {
        throw OrchardError(.payloadTooLarge, "the request body is larger than \(limit) bytes")
    }
    var request = request
    do {
        let buffer = try await request.collectBody(upTo: limit)
        return Array(buffer.readableBytesView)
    } catch {
        throw OrchardError(.payloadTooLarge, "the request body is larger than \(limit) bytes")
    }
}
