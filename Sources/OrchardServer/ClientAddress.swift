import Foundation
import HTTPTypes
import Hummingbird

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// An IP address as 16 bytes; an IPv4 address is kept mapped (`::ffff:a.b.c.d`) so one
/// comparison serves both families.
public struct IPAddress: Hashable, Sendable, CustomStringConvertible {
    /// 16 bytes, network order.
    public let bytes: [UInt8]

    /// Parses `203.0.113.7` or `2001:db8::1` (brackets allowed); nil for anything else.
    public init?(_ text: some StringProtocol) {
        var text = String(text)
        if text.hasPrefix("["), text.hasSuffix("]") { text = String(text.dropFirst().dropLast()) }
        guard !text.isEmpty, text.utf8.count <= 45 else { return nil }
        var v4 = in_addr()
        if inet_pton(AF_INET, text, &v4) == 1 {
            bytes = Array(repeating: 0, count: 10) + [0xFF, 0xFF] + withUnsafeBytes(of: &v4.s_addr) { Array($0) }
            return
        }
        var v6 = in6_addr()
        guard inet_pton(AF_INET6, text, &v6) == 1 else { return nil }
        bytes = withUnsafeBytes(of: &v6) { Array($0) }
    }

    /// True for an IPv4 address (kept as `::ffff:a.b.c.d`).
    public var isIPv4: Bool { bytes[0..<10].allSatisfy { $0 == 0 } && bytes[10] == 0xFF && bytes[11] == 0xFF }

    public var description: String {
        if isIPv4 { return bytes[12...].map(String.init).joined(separator: ".") }
        return stride(from: 0, to: 16, by: 2).map { String(UInt16(bytes[$0]) << 8 | UInt16(bytes[$0 + 1]), radix: 16) }
            .joined(separator: ":")
    }

    /// What a rate limit counts: the address for IPv4, its /64 for IPv6 (one subscriber's usual share).
    public var rateLimitKey: String {
        if isIPv4 { return description }
        return stride(from: 0, to: 8, by: 2).map { String(UInt16(bytes[$0]) << 8 | UInt16(bytes[$0 + 1]), radix: 16) }
            .joined(separator: ":") + "::/64"
    }
}

/// An address block: `10.0.0.0/8`, `fd00::/8`, or one address (`10.0.0.5`, a /32 or /128).
public struct IPNetwork: Sendable, Equatable, CustomStringConvertible {
    /// The block's first address, as written.
    public let address: IPAddress
    /// Leading bits that must match, out of 128 (an IPv4 /8 is 104 here).
    public let prefixBits: Int

    public init?(_ text: String) {
        let parts = text.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count <= 2, let address = IPAddress(parts[0]) else { return nil }
        let width = address.isIPv4 ? 32 : 128
        var bits = width
        if parts.count == 2 {
            guard let given = Int(parts[1]), (0...width).contains(given), parts[1].allSatisfy(\.isNumber) else { return nil }
            bits = given
        }
        self.address = address
        self.prefixBits = bits + (address.isIPv4 ? 96 : 0)
    }

    /// True when `candidate`'s first ``prefixBits`` bits are the block's.
    public func contains(_ candidate: IPAddress) -> Bool {
        var left = prefixBits
        for index in 0..<16 where left > 0 {
            let mask: UInt8 = left >= 8 ? 0xFF : ~(0xFF >> UInt8(left))
            if candidate.bytes[index] & mask != address.bytes[index] & mask { return false }
            left -= 8
        }
        return true
    }

    public var description: String { "\(address)/\(address.isIPv4 ? prefixBits - 96 : prefixBits)" }
}

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
