import Foundation

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

    /// Parses `203.0.113.7` or `2001:db8::1` (brackets allowed); nil for anything else. IPv4 is
    /// the strict dotted quad of `inet_pton` (no `127.1`, no octal or hex parts).
    public init?(_ text: some StringProtocol) {
        var text = String(text)
        if text.hasPrefix("["), text.hasSuffix("]") { text = String(text.dropFirst().dropLast()) }
        guard !text.isEmpty, text.utf8.count <= 45 else { return nil }
        var v4 = in_addr()
        if inet_pton(AF_INET, text, &v4) == 1 {
            bytes = Self.mappedPrefix + withUnsafeBytes(of: &v4.s_addr) { Array($0) }
            return
        }
        var v6 = in6_addr()
        guard inet_pton(AF_INET6, text, &v6) == 1 else { return nil }
        bytes = withUnsafeBytes(of: &v6) { Array($0) }
    }

    /// An address as a socket holds it: 4 bytes (IPv4) or 16 (IPv6), network order; nil for any other length.
    public init?(bytes: [UInt8]) {
        switch bytes.count {
        case 4: self.bytes = Self.mappedPrefix + bytes
        case 16: self.bytes = bytes
        default: return nil
        }
    }

    private static let mappedPrefix: [UInt8] = Array(repeating: 0, count: 10) + [0xFF, 0xFF]

    /// True for an IPv4 address (kept as `::ffff:a.b.c.d`).
    public var isIPv4: Bool { bytes[0..<10].allSatisfy { $0 == 0 } && bytes[10] == 0xFF && bytes[11] == 0xFF }

    public var description: String {
        if isIPv4 { return bytes[12...].map(String.init).joined(separator: ".") }
        return stride(from: 0, to: 16, by: 2).map { String(UInt16(bytes[$0]) << 8 | UInt16(bytes[$0 + 1]), radix: 16) }
            .joined(separator: ":")
    }

    /// The address as people write it: dotted quad, or IPv6 with its longest run of zero groups
    /// as `::` (RFC 5952), for messages.
    public var compact: String {
        if isIPv4 { return description }
        let groups = stride(from: 0, to: 16, by: 2).map { UInt16(bytes[$0]) << 8 | UInt16(bytes[$0 + 1]) }
        var best = (start: -1, length: 0)
        var index = 0
        while index < groups.count {
            var end = index
            while end < groups.count && groups[end] == 0 { end += 1 }
            if end - index > max(best.length, 1) { best = (index, end - index) }
            index = end == index ? index + 1 : end
        }
        let hex = groups.map { String($0, radix: 16) }
        guard best.start >= 0 else { return hex.joined(separator: ":") }
        let head = hex[..<best.start].joined(separator: ":")
        let tail = hex[(best.start + best.length)...].joined(separator: ":")
        return head + "::" + tail
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
