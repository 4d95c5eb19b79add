import Foundation
import Testing

@testable import ApplePay

@Suite("Web Merchant Registration requests are checked before they are sent")
struct MerchantRegistrationTests {
    func registration(
        domains: [String] = ["Shop.Example"], id: String = "p-1", name: String = "Shop", url: String? = nil,
        encryptTo: String = "merchant.x"
    ) -> MerchantRegistration {
        MerchantRegistration(
            domainNames: domains, encryptTo: encryptTo, partnerInternalMerchantIdentifier: id, partnerMerchantName: name, merchantUrl: url)
    }

    @Test("a valid registration is normalised to lowercase domains")
    func valid() throws {
        let checked = try registration(domains: ["Shop.Example", "www.shop.example"], url: "https://shop.example/").validated()
        #expect(checked.domainNames == ["shop.example", "www.shop.example"])
        #expect(try registration(domains: (1...99).map { "d\($0).example" }).validated().domainNames.count == 99)
        #expect(try registration(id: "aZ09~-_+&@$!|,.;").validated().partnerInternalMerchantIdentifier == "aZ09~-_+&@$!|,.;")
    }

    @Test(
        "invalid registrations name the rule they break",
        arguments: [
            ([String](), "p-1", "Shop", nil, "1 to 99"),
            ((1...100).map { "d\($0).example" }, "p-1", "Shop", nil, "1 to 99"),
            (["shop.example."], "p-1", "Shop", nil, "not a valid domain"),
            (["192.168.0.1:443"], "p-1", "Shop", nil, "not a valid domain"),
            (["-bad.example"], "p-1", "Shop", nil, "not a valid domain"),
            (["a.example", "A.EXAMPLE"], "p-1", "Shop", nil, "listed twice"),
            (["a.example"], "", "Shop", nil, "partnerInternalMerchantIdentifier"),
            (["a.example"], "p 1", "Shop", nil, "partnerInternalMerchantIdentifier"),
            (["a.example"], "p/1", "Shop", nil, "partnerInternalMerchantIdentifier"),
            (["a.example"], String(repeating: "x", count: 129), "Shop", nil, "partnerInternalMerchantIdentifier"),
            (["a.example"], "p-1", "  ", nil, "partnerMerchantName"),
            (["a.example"], "p-1", String(repeating: "n", count: 65), nil, "partnerMerchantName"),
            (["a.example"], "p-1", "Shop", "http://a.example", "merchantUrl"),
            (["a.example"], "p-1", "Shop", "https://1.2.3.4", "merchantUrl"),
        ] as [([String], String, String, String?, String)])
    func invalid(domains: [String], id: String, name: String, url: String?, expected: String) {
        #expect {
            try registration(domains: domains, id: id, name: name, url: url).validated()
        } throws: { error in
            guard let error = error as? ApplePayError else { return false }
            return error.code == .invalidRegistration && error.message.contains(expected)
        }
    }

    @Test("unregistration needs a reason and the same domain and identifier rules")
    func unregistration() throws {
        let valid = try MerchantUnregistration(domainNames: ["A.example"], partnerInternalMerchantIdentifier: "p-1", reason: "closed")
            .validated()
        #expect(valid.domainNames == ["a.example"])
        #expect(throws: ApplePayError.self) {
            try MerchantUnregistration(domainNames: ["a.example"], partnerInternalMerchantIdentifier: "p-1", reason: " ").validated()
        }
        #expect(throws: ApplePayError.self) {
            try MerchantUnregistration(domainNames: [], partnerInternalMerchantIdentifier: "p-1", reason: "x").validated()
        }
    }
}
