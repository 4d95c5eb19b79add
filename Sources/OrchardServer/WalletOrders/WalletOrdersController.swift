import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import OrchardCore
import OrchardServices

/// The web service Wallet calls, under the path of each merchant's `walletOrders.webServiceURL`
/// (developer.apple.com/documentation/walletorders). The order type names the merchant, not the
/// Host, so these routes answer on any host; an order that is missing, another merchant's or
/// asked for with the wrong token is answered alike (401, as Apple documents).
struct WalletOrdersController {
    let service: WalletOrderService
    /// The distinct paths of the configured `webServiceURL`s, like `/wallet-orders`.
    let paths: [String]
    let limiter: RateLimiter

    /// `{"pushToken": …}` is a few dozen bytes; Wallet's log lines a few hundred each.
    static let maximumRegistrationBytes = 1024
    static let maximumLogBytes = 16 * 1024

    struct Registration: Decodable {
        var pushToken: String
    }

    /// The routes the router adds.
    var routes: RouteCollection<OrchardRequestContext> {
        let router = RouteCollection(context: OrchardRequestContext.self)
        for path in paths {
            let base = "\(path)/v1"
            let device = "\(base)/devices/{device}/registrations/{type}"
            router.postJSON("\(device)/{order}") { request, context in try await register(request, context) }
            router.delete("\(device)/{order}") { request, context in try await unregister(request, context) }
            router.get(RouterPath(device)) { request, context in try await changed(request, context) }
            router.get("\(base)/orders/{type}/{order}") { request, context in try await order(request, context) }
            router.postJSON("\(base)/log") { request, context in try await log(request, context) }
        }
        return router
    }

    func register(_ request: Request, _ context: OrchardRequestContext) async throws -> Response {
        try limiter.check(.walletOrders, context: context, merchant: nil)
        let bytes = try await readBody(request, limit: Self.maximumRegistrationBytes)
        guard let body = try? JSONDecoder().decode(Registration.self, from: Data(bytes)) else {
            throw OrchardError(.invalidJSON, "the body must be {\"pushToken\": \"…\"}")
        }
        let answer = try await service.register(
            deviceIdentifier: try context.parameters.require("device"), orderTypeIdentifier: try context.parameters.require("type"),
            orderIdentifier: try context.parameters.require("order"), authorization: request.headers[.authorization],
            pushToken: body.pushToken)
        switch answer {
        case .created: return Response(status: .created)
        case .existing: return Response(status: .ok)
        case .unauthorized: throw Self.unauthorized
        case .tooManyDevices:
            throw OrchardError(.rateLimited, "the order has \(WalletOrderService.devicesPerOrder) devices registered already", retryAfter: 3600)
        }
    }

    func unregister(_ request: Request, _ context: OrchardRequestContext) async throws -> Response {
        try limiter.check(.walletOrders, context: context, merchant: nil)
        let done = try await service.unregister(
            deviceIdentifier: try context.parameters.require("device"), orderTypeIdentifier: try context.parameters.require("type"),
            orderIdentifier: try context.parameters.require("order"), authorization: request.headers[.authorization])
        guard done else { throw Self.unauthorized }
        return Response(status: .ok)
    }

    func changed(_ request: Request, _ context: OrchardRequestContext) async throws -> Response {
        try limiter.check(.walletOrders, context: context, merchant: nil)
        let changed = try await service.changed(
            deviceIdentifier: try context.parameters.require("device"), orderTypeIdentifier: try context.parameters.require("type"),
            since: request.uri.queryParameters.get("ordersModifiedSince"))
        guard let changed else { return Response(status: .noContent) }
        var headers = HTTPFields()
        headers[.contentType] = "application/json"
        return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: try JSONEncoder().encode(changed))))
    }

    func order(_ request: Request, _ context: OrchardRequestContext) async throws -> Response {
        try limiter.check(.walletOrders, context: context, merchant: nil)
        let since = request.headers[.ifModifiedSince].flatMap { $0.utf8.count <= 64 ? HTTPDate.parse($0) : nil }
        let fetched = try await service.package(
            orderTypeIdentifier: try context.parameters.require("type"), orderIdentifier: try context.parameters.require("order"),
            authorization: request.headers[.authorization], ifModifiedSince: since)
        var headers = HTTPFields()
        headers[.cacheControl] = "no-cache"
        switch fetched {
        case .unauthorized:
            throw Self.unauthorized
        case .notModified(let lastModified):
            headers[.lastModified] = HTTPDate.format(lastModified)
            return Response(status: .notModified, headers: headers)
        case .package(let bytes, let lastModified):
            headers[.lastModified] = HTTPDate.format(lastModified)
            headers[.contentType] = "application/vnd.apple.finance.order"
            return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: bytes)))
        }
    }

    /// Wallet's own error reports: written to the log, each line escaped and cut short, at most 20 a call.
    func log(_ request: Request, _ context: OrchardRequestContext) async throws -> Response {
        try limiter.check(.walletOrders, context: context, merchant: nil)
        let bytes = try await readBody(request, limit: Self.maximumLogBytes)
        struct Entries: Decodable { var logs: [String] }
        let decoder = JSONDecoder()
        guard let lines = (try? decoder.decode(Entries.self, from: Data(bytes)).logs) ?? (try? decoder.decode([String].self, from: Data(bytes)))
        else { throw OrchardError(.invalidJSON, "the body must be {\"logs\": [\"…\"]}") }
        for line in lines.prefix(20) {
            context.logger.notice("wallet reported", metadata: ["message": "\(String(line.prefix(500)).debugDescription)"])
        }
        return Response(status: .ok)
    }

    static let unauthorized = OrchardError(.unauthorized, "no such order for this token")
}
