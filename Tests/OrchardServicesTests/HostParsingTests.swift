import Testing

@testable import OrchardServices

/// The Host header to a merchant's domain, on the fast path and the full one alike.
@Suite("Host to domain")
struct HostParsingTests {
    @Test(
        "ports dropped, case folded, brackets removed; empty names, non-numeric ports and over-long names refused",
        arguments: [
            ("shop.example", "shop.example"), ("shop.example:8443", "shop.example"), ("Shop.Example:8443", "shop.example"),
            ("127.0.0.1:8080", "127.0.0.1"), ("[::1]:80", "::1"), ("[::1", nil), ("shop.example:", "shop.example"), (":80", nil),
            ("shop.example:80a", nil), ("", nil), (String(repeating: "a", count: 254), nil),
            (String(repeating: "a", count: 253) + ":1", String(repeating: "a", count: 253)),
            ("ÉCOLE.example", "école.example"),
        ] as [(String, String?)])
    func domain(host: String, expected: String?) {
        #expect(MerchantDirectory.domain(fromHost: host) == expected)
    }
}
