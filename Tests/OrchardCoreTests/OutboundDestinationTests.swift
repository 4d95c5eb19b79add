import Foundation
import OrchardCore
import Testing

/// The outbound-destination policy: which addresses are public unicast (IANA's special-purpose
/// registries), and which URLs a tenant may set.
@Suite("Outbound destinations: public unicast addresses and tenants' URLs")
struct OutboundDestinationTests {
    /// Addresses that are not public unicast, each with the block its refusal must name.
    static let special: [(String, String)] = [
        ("0.0.0.0", "\"this network\", 0.0.0.0/8"), ("0.1.2.3", "0.0.0.0/8"),
        ("10.0.0.1", "private-use, 10.0.0.0/8"), ("10.255.255.255", "10.0.0.0/8"),
        ("100.64.0.1", "carrier-grade NAT"), ("100.127.255.254", "100.64.0.0/10"),
        ("127.0.0.1", "loopback, 127.0.0.0/8"), ("127.255.0.9", "loopback"),
        ("169.254.169.254", "link-local, 169.254.0.0/16"),
        ("172.16.0.1", "private-use, 172.16.0.0/12"), ("172.31.255.255", "172.16.0.0/12"),
        ("192.0.0.8", "IETF protocol assignments, 192.0.0.0/24"), ("192.0.0.171", "192.0.0.0/24"),
        ("192.0.2.44", "TEST-NET-1"), ("198.51.100.7", "TEST-NET-2"), ("203.0.113.200", "TEST-NET-3"),
        ("192.31.196.1", "AS112"), ("192.52.193.1", "AMT"), ("192.88.99.1", "6to4 relay"), ("192.175.48.6", "AS112"),
        ("192.168.1.1", "private-use, 192.168.0.0/16"),
        ("198.18.0.1", "benchmarking, 198.18.0.0/15"), ("198.19.255.255", "198.18.0.0/15"),
        ("224.0.0.251", "multicast, 224.0.0.0/4"), ("239.255.255.250", "multicast"),
        ("240.0.0.1", "reserved, 240.0.0.0/4"), ("255.255.255.254", "reserved"),
        ("255.255.255.255", "limited broadcast"),
        ("::", "unspecified, ::/128"), ("::1", "loopback, ::1/128"), ("::a00:1", "IPv4-compatible"),
        ("::ffff:127.0.0.1", "loopback, 127.0.0.0/8"), ("::ffff:a9fe:a9fe", "link-local"), ("::ffff:0:a00:1", "not global unicast"),
        ("64:ff9b::10.0.0.1", "NAT64 64:ff9b::/96 carrying 10.0.0.1: private-use"),
        ("64:ff9b::7f00:1", "carrying 127.0.0.1: loopback"),
        ("64:ff9b:1::1", "local-use IPv4/IPv6 translation"),
        ("100::1", "discard-only"), ("100:0:0:1::1", "dummy prefix"),
        ("2001::1", "Teredo, 2001::/32"), ("2001:0:4136:e378:8000:63bf:3fff:fdd2", "Teredo"),
        ("2001:db8::1", "documentation, 2001:db8::/32"), ("2001:10::1", "IETF protocol assignments, 2001::/23"),
        ("2001:1::1", "2001::/23"),
        ("2002:a00:1::1", "6to4 2002::/16 carrying 10.0.0.1: private-use"), ("2002:7f00:1::", "carrying 127.0.0.1"),
        ("2002:c000:0201::1", "TEST-NET-1"),
        ("2620:4f:8000::1", "AS112"), ("3fff::1", "documentation, 3fff::/20"), ("5f00::1", "SRv6"),
        ("fc00::1", "unique local, fc00::/7"), ("fd00::1", "unique local"), ("fdff:ffff::1", "unique local"),
        ("fe80::1", "link-local, fe80::/10"), ("febf::1", "link-local"), ("fec0::1", "site-local"),
        ("ff02::1", "multicast, ff00::/8"), ("ff0e::1", "multicast"),
        ("4000::1", "not global unicast, outside 2000::/3"), ("e000::1", "outside 2000::/3"), ("1::", "outside 2000::/3"),
    ]

    /// Public unicast addresses, some right beside a special block.
    static let publicAddresses = [
        "1.1.1.1", "8.8.8.8", "9.255.255.255", "11.0.0.0", "100.63.255.255", "100.128.0.0", "126.255.255.255", "128.0.0.1",
        "169.253.255.255", "169.255.0.1", "172.15.255.255", "172.32.0.0", "192.0.1.1", "192.0.3.0", "192.167.255.255", "192.169.0.1",
        "198.17.255.255", "198.20.0.0", "198.51.99.255", "203.0.112.255", "223.255.255.255", "93.184.216.34",
        "::ffff:93.184.216.34", "64:ff9b::93.184.216.34", "2002:5db8:d822::1", "2001:200::1", "2001:4860:4860::8888",
        "2606:4700:4700::1111", "2a00:1450:4001::1", "3ffe::1", "3fff:1000::1", "2620:4f:8001::1",
    ]

    @Test("every special-purpose block is refused, naming its purpose and block", arguments: special)
    func refused(address: String, naming: String) throws {
        let parsed = try #require(IPAddress(address), "\(address) parses")
        let refusal = try #require(SpecialAddresses.refusal(for: parsed), "\(address) is not public")
        #expect(refusal.contains(naming), "\(address): \(refusal)")
    }

    @Test("public unicast addresses pass, including those beside a special block and v4-carrying forms of a public IPv4")
    func publicUnicast() throws {
        for address in Self.publicAddresses {
            let parsed = try #require(IPAddress(address), "\(address) parses")
            #expect(SpecialAddresses.refusal(for: parsed) == nil, "\(address)")
        }
    }

    @Test("an address the socket holds (4 or 16 bytes) is judged the same as its text; other lengths are no address")
    func socketBytes() throws {
        #expect(IPAddress(bytes: [127, 0, 0, 1]) == IPAddress("127.0.0.1"))
        #expect(IPAddress(bytes: [0xFD] + Array(repeating: 0, count: 14) + [1]) == IPAddress("fd00::1"))
        #expect(IPAddress(bytes: [1, 2, 3]) == nil)
        #expect(IPAddress("fd00:0:0:0:0:0:0:1")?.compact == "fd00::1")
        #expect(IPAddress("2001:db8:0:1:0:0:0:1")?.compact == "2001:db8:0:1::1")
        #expect(IPAddress("2001:db8:0:1:1:1:1:1")?.compact == "2001:db8:0:1:1:1:1:1", "a single zero group is not shortened")
        #expect(IPAddress("::")?.compact == "::")
        #expect(IPAddress("127.1") == nil && IPAddress("0x7f.0.0.1") == nil && IPAddress("017.0.0.1") == nil, "dotted quads only")
    }

    @Test("the configuration file's private networks let tenants reach those addresses, and only those")
    func privateNetworks() throws {
        let strict = TenantDestinations()
        let loopback = TenantDestinations(privateNetworks: [try #require(IPNetwork("127.0.0.0/8")), try #require(IPNetwork("::1"))])
        let address = try #require(IPAddress("127.0.0.1"))
        #expect(strict.refusal(for: address) == "127.0.0.1, not a public address (loopback, 127.0.0.0/8)")
        #expect(loopback.refusal(for: address) == nil)
        #expect(loopback.refusal(for: try #require(IPAddress("::1"))) == nil)
        #expect(loopback.refusal(for: try #require(IPAddress("10.0.0.1"))) != nil)
        #expect(loopback.refusal(for: try #require(IPAddress("8.8.8.8"))) == nil)
        #expect(strict.refusal(for: try #require(IPAddress("fd00::1"))) == "fd00::1, not a public address (unique local, fc00::/7)")
    }

    @Test("a tenant's URL: a non-public IP host, a number that is not a dotted quad, a single label or a local name is refused when set")
    func tenantURLs() {
        let policy = TenantDestinations()
        let refused: [(String, String)] = [
            ("https://169.254.169.254/latest/meta-data/", "169.254.169.254, not a public address (link-local"),
            ("https://[fd00::1]/", "fd00::1, not a public address (unique local"), ("https://0.0.0.0/", "\"this network\""),
            ("https://[::ffff:10.0.0.1]/", "10.0.0.1, not a public address"), ("https://[fe80::1%25eth0]/", "neither"),
            ("https://2130706433/", "written as a number"), ("https://0x7f000001/", "written as a number"),
            ("https://127.1/", "written as a number"), ("https://10.0.1/x", "written as a number"),
            ("https://localhost/", "is localhost, which names this machine"), ("https://LOCALHOST./", "is localhost"),
            ("https://api.localhost/", "under .localhost"), ("https://printer.local/", "under .local"),
            ("https://metadata.google.internal/computeMetadata/v1/", "under .internal"), ("https://nas.home.arpa/", "under .home.arpa"),
            ("https://metadata/", "single-label"), ("https://shop_1.example/", "neither"), ("https://-shop.example/", "neither"),
        ]
        for (url, naming) in refused {
            let refusal = policy.refusal(forURL: url)
            #expect(refusal?.contains(naming) == true, "\(url): \(refusal ?? "accepted")")
        }
        for url in [
            "https://shop.example/hook", "https://8.8.8.8/hook", "https://[2606:4700::1]:8443/q", "https://xn--bcher-kva.example./",
        ] {
            #expect(policy.refusal(forURL: url) == nil, "\(url)")
        }
        let loopback = TenantDestinations(privateNetworks: [IPNetwork("127.0.0.0/8")!])
        #expect(loopback.refusal(forURL: "http://127.0.0.1:8080/hook") == nil, "an address the file allows")
        #expect(loopback.refusal(forURL: "https://localhost/") != nil, "local names stay refused")
    }
}
