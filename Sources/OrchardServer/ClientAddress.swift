import Foundation
import HTTPTypes
import Hummingbird
import OrchardCore

/// Who the client is: the socket's peer, unless the peer is a trusted proxy, in which case the
/// proxy's header names the client (the right-most address in `X-Forwarded-For` that is not
/// itself a trusted proxy, since a client can write anything to the left of what its proxy adds).
public enum ClientAddress {
    /// - Parameters:
    ///   - peer: the socket's peer.
    ///   - headerValues: every value of the configured header (`X-Forwarded-For` or `X-Real-IP`).
    public static func resolve(peer: IPAddress?, headerValues: [String], trustedProxies: [IPNetwork]) -> IPAddress? {
        func isTrusted(_ address: IPAddress) -> Bool { trustedProxies.contains { $0.contains(address) } }
        guard let peer, isTrusted(peer), !headerValues.isEmpty else { return peer }
        let hops = headerValues.flatMap { $0.split(separator: ",") }.map { $0.trimmingCharacters(in: .whitespaces) }
        var client = peer
        for hop in hops.reversed() {
            // An unreadable hop ends the walk: the last trusted proxy is the best answer left.
            guard let address = IPAddress(hop) else { return client }
            client = address
            if !isTrusted(address) { return address }
        }
        return client
    }
}

/// Sets ``OrchardRequestContext/clientAddress`` for every route.
struct ClientAddressMiddleware: RouterMiddleware {
    let trustedProxies: [IPNetwork]
    let header: HTTPField.Name

    init(trustedProxies: [IPNetwork], header: String) {
        self.trustedProxies = trustedProxies
        self.header = HTTPField.Name(header) ?? .init("X-Forwarded-For")!
    }

    func handle(
        _ request: Request, context: OrchardRequestContext, next: (Request, OrchardRequestContext) async throws -> Response
    ) async throws -> Response {
        var context = context
        context.clientAddress = ClientAddress.resolve(
            peer: context.peerAddress, headerValues: request.headers[values: header], trustedProxies: trustedProxies)
        return try await next(request, context)
    }
}
