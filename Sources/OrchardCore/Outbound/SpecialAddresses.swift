/// Which addresses are public unicast: everything except the blocks of IANA's IPv4 and IPv6
/// Special-Purpose Address Registries (RFC 6890 and its updates), multicast, IPv4's reserved
/// 240/4, IPv6 outside global unicast (2000::/3), and the anycast service prefixes a shop
/// never lives on. Addresses that carry an IPv4 address (IPv4-mapped, NAT64's well-known
/// prefix, 6to4) are judged by that address, since that is where the packets end up.
public enum SpecialAddresses {
    /// A block that is not public unicast, and what it is for.
    public struct Block: Sendable, CustomStringConvertible {
        public let network: IPNetwork
        /// What the registry calls it: `loopback`, `private-use`, `link-local`…
        public let purpose: String
        /// The block as the registry writes it (`fc00::/7`).
        let text: String

        init(_ network: String, _ purpose: String) {
            self.network = IPNetwork(network)!
            self.purpose = purpose
            self.text = network
        }

        public var description: String { "\(purpose), \(text)" }
    }

    /// IPv4 blocks, most specific first, so a message names the narrowest.
    public static let ipv4: [Block] = [
        Block("255.255.255.255/32", "limited broadcast"),
        Block("0.0.0.0/8", "\"this network\""),
        Block("10.0.0.0/8", "private-use"),
        Block("100.64.0.0/10", "shared address space (carrier-grade NAT)"),
        Block("127.0.0.0/8", "loopback"),
        Block("169.254.0.0/16", "link-local"),
        Block("172.16.0.0/12", "private-use"),
        Block("192.0.0.0/24", "IETF protocol assignments"),
        Block("192.0.2.0/24", "documentation (TEST-NET-1)"),
        Block("192.31.196.0/24", "AS112 anycast"),
        Block("192.52.193.0/24", "AMT anycast"),
        Block("192.88.99.0/24", "deprecated 6to4 relay anycast"),
        Block("192.168.0.0/16", "private-use"),
        Block("192.175.48.0/24", "AS112 direct delegation anycast"),
        Block("198.18.0.0/15", "benchmarking"),
        Block("198.51.100.0/24", "documentation (TEST-NET-2)"),
        Block("203.0.113.0/24", "documentation (TEST-NET-3)"),
        Block("224.0.0.0/4", "multicast"),
        Block("240.0.0.0/4", "reserved"),
    ]

    /// IPv6 blocks, most specific first. Anything outside 2000::/3 is refused after these.
    public static let ipv6: [Block] = [
        Block("::/128", "unspecified"),
        Block("::1/128", "loopback"),
        Block("::/96", "IPv4-compatible (deprecated)"),
        Block("64:ff9b:1::/48", "local-use IPv4/IPv6 translation"),
        Block("100::/64", "discard-only"),
        Block("100:0:0:1::/64", "dummy prefix"),
        Block("2001::/32", "Teredo"),
        Block("2001:db8::/32", "documentation"),
        Block("2001::/23", "IETF protocol assignments"),
        Block("2620:4f:8000::/48", "AS112 direct delegation anycast"),
        Block("3fff::/20", "documentation"),
        Block("5f00::/16", "segment routing (SRv6) SIDs"),
        Block("fc00::/7", "unique local"),
        Block("fe80::/10", "link-local"),
        Block("fec0::/10", "site-local (deprecated)"),
        Block("ff00::/8", "multicast"),
    ]

    static let globalUnicast = Block("2000::/3", "global unicast")
    static let nat64 = Block("64:ff9b::/96", "NAT64")
    static let sixToFour = Block("2002::/16", "6to4")

    /// Why `address` is not public unicast, or nil when it is. The answer for an address that
    /// embeds IPv4 names both: `6to4 2002::/16 carrying 10.0.0.1: private-use, 10.0.0.0/8`.
    public static func refusal(for address: IPAddress) -> String? {
        if address.isIPv4 {
            return ipv4.first { $0.network.contains(address) }.map(\.description)
        }
        if nat64.network.contains(address) {
            return embedded(Array(address.bytes[12..<16]), carrier: "NAT64 \(nat64.text)")
        }
        if sixToFour.network.contains(address) {
            return embedded(Array(address.bytes[2..<6]), carrier: "6to4 \(sixToFour.text)")
        }
        if let block = ipv6.first(where: { $0.network.contains(address) }) { return block.description }
        guard globalUnicast.network.contains(address) else { return "not global unicast, outside \(globalUnicast.text)" }
        return nil
    }

    private static func embedded(_ v4: [UInt8], carrier: String) -> String? {
        guard let inner = IPAddress(bytes: v4) else { return carrier }
        return refusal(for: inner).map { "\(carrier) carrying \(inner): \($0)" }
    }
}
