import ApplePay
import Testing

@Suite("Apple gateway host allowlist and validationURL check")
struct GatewayHostsTests {
    @Test("every Apple host is known: global, China, sandbox, pods and their -dr twins")
    func allHosts() {
        #expect(GatewayHosts.all.count == 4 + 2 * 5 * 2 + 2 * 3 * 2)
        for host in [
            "apple-pay-gateway.apple.com", "cn-apple-pay-gateway.apple.com", "apple-pay-gateway-cert.apple.com",
            "cn-apple-pay-gateway-cert.apple.com", "apple-pay-gateway-nc-pod1.apple.com", "apple-pay-gateway-pr-pod5.apple.com",
            "apple-pay-gateway-nc-pod3-dr.apple.com", "cn-apple-pay-gateway-sh-pod2.apple.com",
            "cn-apple-pay-gateway-tj-pod3-dr.apple.com",
        ] {
            #expect(GatewayHosts.isAppleHost(host), "\(host)")
        }
        for host in ["apple-pay-gateway-nc-pod6.apple.com", "cn-apple-pay-gateway-sh-pod4.apple.com", "apple.com", "gateway.apple.com"] {
            #expect(!GatewayHosts.isAppleHost(host), "\(host)")
        }
    }

    @Test(
        "real validation URLs are accepted and give their host",
        arguments: [
            ("https://apple-pay-gateway.apple.com/paymentservices/startSession", "apple-pay-gateway.apple.com"),
            ("https://apple-pay-gateway-cert.apple.com/paymentservices/paymentSession", "apple-pay-gateway-cert.apple.com"),
            ("https://apple-pay-gateway-nc-pod5.apple.com:443/paymentservices/startSession", "apple-pay-gateway-nc-pod5.apple.com"),
            (
                "https://cn-apple-pay-gateway-tj-pod1-dr.apple.com/paymentservices/paymentSession",
                "cn-apple-pay-gateway-tj-pod1-dr.apple.com"
            ),
            ("https://apple-pay-gateway.apple.com", "apple-pay-gateway.apple.com"),
            ("https://apple-pay-gateway.apple.com/", "apple-pay-gateway.apple.com"),
        ])
    func accepted(url: String, host: String) throws {
        #expect(try GatewayHosts.validateValidationURL(url) == host)
    }

    @Test(
        "lookalikes are rejected with a reason",
        arguments: [
            ("https://apple-pay-gateway.apple.com@evil.test/", "userinfo"),
            ("https://apple-pay-gateway.apple.com.evil.test/", "not an Apple Pay gateway host"),
            ("http://apple-pay-gateway.apple.com/", "scheme must be https"),
            ("https://apple-pay-gateway.apple.com:444/", "port must be 443"),
            ("https://apple-pay-gateway.apple.com:/", "port must be 443"),
            ("https://APPLE-PAY-GATEWAY.apple.com/", "not an Apple Pay gateway host"),
            ("https://apple-pay-gateway.apple.com./", "not an Apple Pay gateway host"),
            ("https://apple-pay-gateway%2Eapple.com/", "percent-encoding"),
            ("https://[::1]/", "IP literals"),
            ("https://17.0.0.1/", "not an Apple Pay gateway host"),
            ("https://apple-pay-gateway.apple.com/admin", "the path must be one of"),
            ("https://аpple-pay-gateway.apple.com/", "non-ASCII"),
            ("", "empty"),
        ])
    func rejected(url: String, reason: String) {
        #expect {
            _ = try GatewayHosts.validateValidationURL(url)
        } throws: { error in
            guard let error = error as? ApplePayError else { return false }
            return error.code == .invalidValidationURL && error.message.contains(reason)
        }
    }
}

@Suite("Merchant session request")
struct MerchantSessionRequestTests {
    @Test("built from configuration with initiative web")
    func fields() throws {
        let request = try MerchantSessionRequest(merchantIdentifier: "merchant.a", displayName: "Shop", domain: "shop.example")
        #expect(request.initiative == "web")
        #expect(request.initiativeContext == "shop.example")
    }

    @Test("display names: 64 characters (not bytes) at most, not empty")
    func displayName() throws {
        _ = try MerchantSessionRequest(merchantIdentifier: "m", displayName: String(repeating: "é", count: 64), domain: "d")
        #expect(throws: ApplePayError.self) {
            _ = try MerchantSessionRequest(merchantIdentifier: "m", displayName: String(repeating: "x", count: 65), domain: "d")
        }
        #expect(throws: ApplePayError.self) { _ = try MerchantSessionRequest(merchantIdentifier: "m", displayName: "", domain: "d") }
        #expect(throws: ApplePayError.self) { _ = try MerchantSessionRequest(merchantIdentifier: "", displayName: "x", domain: "d") }
    }

    @Test("the merchant-ID hash is uppercase hex SHA-256")
    func merchantHash() {
        // SHA-256("merchant.com.example") computed independently with `printf %s merchant.com.example | sha256sum`.
        #expect(
            MerchantIdentifierExtension.hash(of: "merchant.com.example")
                == "224D417877B0EBD0C882C2D68E557A781092803CC75887CC11D2D954D77EAC59")
    }
}
