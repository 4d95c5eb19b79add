import ApplePay
import Crypto
import CurlClient
import Foundation
import OrchardComposition
import OrchardConfiguration
import OrchardCore
import OrchardIntegrationTesting
import OrchardRuntime
import OrchardServer
import OrchardServerTesting
import OrchardServices
import OrchardTesting
import Testing

@Suite("Checkout settings, security headers and the demo's simulated sheet, over real HTTP")
struct CheckoutTests {
    static func header(_ name: String, in response: CurlResponse) -> String? {
        response.headers.first { $0.name.lowercased() == name.lowercased() }?.value
    }

    func createOrder(_ server: ServerHarness) async throws -> (id: String, request: [String: Any]) {
        let response = try await server.send(
            "POST", "/api/orders", body: Array(#"{"items": [{"productId": "apple", "quantity": 2}]}"#.utf8))
        #expect(response.status == 201)
        let json = try #require(response.json)
        return (try #require(json["orderId"] as? String), try #require(json["paymentRequest"] as? [String: Any]))
    }

    @Test("outside the demo: settings without a simulated sheet, no /demo routes, Apple's SDK in a strict CSP")
    func settingsWithoutSimulator() async throws {
        try await ServerHarness.with { server in
            let response = try await server.send("GET", "/api/checkout")
            #expect(response.status == 200)
            let json = try #require(response.json)
            #expect(json["merchantIdentifier"] as? String == TestMaterial.merchantIdentifier)
            #expect(json["currencyCode"] as? String == "EUR")
            #expect((json["products"] as? [[String: Any]])?.first?["price"] as? String == "2.50")
            #expect(json["applePaySDK"] as? String == "https://applepay.cdn-apple.com/jsapi/1.latest/apple-pay-sdk.js")
            #expect(json["applePaySDKTimeoutMs"] as? Int == 5000 && json["applePaySDKIntegrity"] == nil)
            #expect(json["applePayMode"] as? String == "session")
            #expect(json["simulatedSheet"] == nil)

            let policy = try #require(Self.header("Content-Security-Policy", in: response))
            #expect(policy.contains("default-src 'none'"))
            #expect(policy.contains("script-src 'self' https://applepay.cdn-apple.com;"))
            #expect(!policy.contains("unsafe"))
            #expect(Self.header("Permissions-Policy", in: response)?.hasPrefix("payment=(self)") == true)

            #expect(try await server.send("GET", "/demo/simulated-sheet.js").status == 404)
            let (_, request) = try await createOrder(server)
            let mint = try await server.send(
                "POST", "/demo/token",
                body: Array(#"{"amount": "9.90", "currencyCode": "EUR", "applicationData": "\#(request["applicationData"]!)"}"#.utf8))
            #expect(mint.status == 404)
            #expect(try await server.send("GET", "/api/checkout", host: "other.example").status == 421)
        }
    }

    @Test("googlePay.scriptURL: Google's pay.js joins the CSP with its button images' host; a script on this server adds nothing")
    func googlePayScriptSetting() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        try directory.write("google-pay-keys.json", GooglePayMinter().rootKeysJSON)
        var file = try ServerHarness.configurationFile(gatewayPort: 1, directory: directory)
        file.checkout = .init(applePaySDK: "none")
        for (script, origins) in [
            (nil, " https://pay.google.com https://www.gstatic.com"), ("https://pay.example/pay.js", " https://pay.example"),
            ("/demo/google-pay.js", ""),
        ] {
            var section = ConfigurationFile.GooglePay(signingKeys: "google-pay-keys.json")
            section.gateway = "orchard-test"
            section.gatewayMerchantId = "shop"
            section.scriptURL = script
            file.merchants[0].googlePay = section
            let policy = try ServerConfiguration.resolve(file, relativeTo: directory.url.path).httpSettings.contentSecurityPolicy
            for directive in ["script-src 'self'", "style-src 'self'", "connect-src 'self'", "img-src 'self' data:"] {
                #expect(policy.contains("\(directive)\(origins);"), "\(script ?? "default"): \(policy)")
            }
            #expect(policy.contains("frame-src \(origins.isEmpty ? "'none'" : String(origins.dropFirst()));"))
        }
    }

    @Test("checkout.applePaySDK: https or loopback http joins the CSP, \"none\" leaves it out, anything else is refused")
    func sdkSetting() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        var file = try ServerHarness.configurationFile(gatewayPort: 1, directory: directory)
        for (value, origin) in [
            ("none", nil), ("https://sdk.example/apple-pay-sdk.js", "https://sdk.example"),
            ("http://127.0.0.1:9999/sdk.js", "http://127.0.0.1:9999"),
        ] {
            file.checkout = .init(applePaySDK: value)
            let configuration = try ServerConfiguration.resolve(file, relativeTo: directory.url.path)
            #expect(configuration.applePaySDK?.absoluteString == (origin == nil ? nil : value))
            #expect(configuration.httpSettings.contentSecurityPolicy.contains("script-src 'self'\(origin.map { " \($0)" } ?? "");"))
            #expect(configuration.httpSettings.contentSecurityPolicy.contains("frame-src \(origin ?? "'none'");"))
            for directive in ["style-src 'self'", "font-src 'self'", "connect-src 'self'", "img-src 'self' data:"] {
                #expect(configuration.httpSettings.contentSecurityPolicy.contains("\(directive)\(origin.map { " \($0)" } ?? "");"))
            }
            #expect(
                !configuration.httpSettings.contentSecurityPolicy.contains("object-src")
                    && !configuration.httpSettings.contentSecurityPolicy.contains("worker-src"))
        }
        for bad in ["http://sdk.example/sdk.js", "javascript:alert(1)", "https://user@sdk.example/x.js", ""] {
            file.checkout = .init(applePaySDK: bad)
            #expect(throws: ConfigurationError.self) { try ServerConfiguration.resolve(file, relativeTo: directory.url.path) }
        }
    }

    @Test("checkout.applePaySDKIntegrity only for a pinned version, as an SRI hash; the timeout within 1–30 s")
    func sdkLoadingSettings() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        var file = try ServerHarness.configurationFile(gatewayPort: 1, directory: directory)
        let pinned = "https://applepay.cdn-apple.com/jsapi/v1.3.8/apple-pay-sdk.js"
        let hash = "sha384-" + Data(repeating: 7, count: 48).base64EncodedString()
        func message(_ sdk: String?, _ integrity: String?, _ timeout: Int? = nil) -> String? {
            file.checkout = .init(applePaySDK: sdk)
            file.checkout?.applePaySDKIntegrity = integrity
            file.checkout?.applePaySDKTimeoutMilliseconds = timeout
            do {
                let loading = try ServerConfiguration.resolve(file, relativeTo: directory.url.path).checkoutPage
                return loading == CheckoutPageSettings(integrity: integrity, timeoutMilliseconds: timeout ?? 5000)
                    ? nil : "loaded otherwise"
            } catch {
                return error.message
            }
        }
        #expect(message(pinned, hash, 8000) == nil)
        #expect(message(nil, hash)?.contains("pin a version") == true, "1.latest changes under a hash")
        // The version it suggests is the one docs/configuration.md pins, not 1.2.0, which the docs call a beta.
        let latest = message(nil, hash) ?? ""
        #expect(latest.contains("/jsapi/v1.3.8/") && !latest.contains("1.2.0"), "\(latest)")
        let docs = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("docs/configuration.md")
        #expect(try String(contentsOf: docs, encoding: .utf8).contains(pinned), "the docs pin the version the message names")
        #expect(message("none", hash)?.contains("needs checkout.applePaySDK") == true)
        #expect(message(pinned, "sha384-short")?.contains("sha256-, sha384- or sha512-") == true)
        #expect(message(pinned, "md5-" + Data(count: 16).base64EncodedString()) != nil)
        #expect(message(pinned, nil, 500)?.contains("1000–30000") == true)
        #expect(message(pinned, nil, 60_000) != nil)
    }

    @Test("checkout.applePayMode: session by default, paymentrequest when asked, anything else refused by name")
    func applePayMode() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        var file = try ServerHarness.configurationFile(gatewayPort: 1, directory: directory)
        func mode(_ value: String?) throws -> CheckoutPageSettings.Mode {
            file.checkout = .init()
            file.checkout?.applePayMode = value
            return try ServerConfiguration.resolve(file, relativeTo: directory.url.path).checkoutPage.mode
        }
        #expect(try mode(nil) == .session)
        #expect(try mode("session") == .session)
        #expect(try mode("paymentrequest") == .paymentRequest)
        for bad in ["PaymentRequest", "payment-request", ""] {
            #expect {
                try mode(bad)
            } throws: { ($0 as? ConfigurationError)?.message.contains("checkout.applePayMode must be") == true }
        }
        file.checkout?.applePayMode = "paymentrequest"
        try await ServerHarness.with(checkout: file.checkout) { server in
            let settings = try #require(try await server.send("GET", "/api/checkout").json)
            #expect(settings["applePayMode"] as? String == "paymentrequest")
        }
    }

    @Test("the simulated sheet is served when given, and its tokens authorize only the amount it shows")
    func simulatedSheet() async throws {
        let sheet = try SimulatedSheet(chain: ServerHarness.tokenChain, processingKey: ServerHarness.processingKey.publicKey)
        try await ServerHarness.with(simulator: sheet, checkout: .init(applePaySDK: "none")) { server in
            let settings = try #require(try await server.send("GET", "/api/checkout").json)
            #expect(settings["simulatedSheet"] as? String == "/demo/simulated-sheet.js")
            #expect(settings["applePaySDK"] == nil)
            let script = try await server.send("GET", "/demo/simulated-sheet.js")
            #expect(script.status == 200)
            #expect(Self.header("Content-Type", in: script)?.hasPrefix("text/javascript") == true)
            #expect(String(decoding: script.body, as: UTF8.self).contains("class SimulatedApplePaySession"))
            #expect(try await server.send("GET", "/demo/simulated-sheet.css").status == 200)
            let paymentRequest = try await server.send("GET", "/demo/simulated-payment-request.js")
            #expect(paymentRequest.status == 200 && Self.header("Content-Type", in: paymentRequest)?.hasPrefix("text/javascript") == true)
            #expect(try await server.send("GET", "/demo/apple-pay-sdk.js").status == 404, "the stand-in SDK only when asked for")

            func mint(_ amount: String, _ applicationData: Any) async throws -> CurlResponse {
                try await server.send(
                    "POST", "/demo/token",
                    body: Array(#"{"amount": "\#(amount)", "currencyCode": "EUR", "applicationData": "\#(applicationData)"}"#.utf8))
            }
            for bad in ["9.9", "9,90", "-9.90", "9.900", " 9.90", "1e3", ""] {
                let refused = try await mint(bad, "")
                #expect(refused.status == 400, "amount \(bad)")
            }

            let (id, request) = try await createOrder(server)
            let tampered = try await mint("9.91", request["applicationData"]!)
            #expect(tampered.status == 200)
            let refused = try await server.send(
                "POST", "/api/apple-pay/authorize",
                body: Array(#"{"orderId": "\#(id)", "payment": {"token": \#(String(decoding: tampered.body, as: UTF8.self))}}"#.utf8))
            #expect(refused.status == 422)
            #expect(refused.json?["status"] as? String == "failure")

            let token = try await mint("9.90", request["applicationData"]!)
            let paid = try await server.send(
                "POST", "/api/apple-pay/authorize",
                body: Array(#"{"orderId": "\#(id)", "payment": {"token": \#(String(decoding: token.body, as: UTF8.self))}}"#.utf8))
            #expect(paid.status == 200)
            #expect(paid.json?["status"] as? String == "success")
        }
    }

    @Test("a payment method change reprices from the catalogue without shipping methods")
    func paymentMethodUpdate() async throws {
        try await ServerHarness.with { server in
            let (id, request) = try await createOrder(server)
            #expect(request["supportsCouponCode"] as? Bool == true)
            let update = try await server.send("POST", "/api/orders/\(id)/payment-method", body: Array(#"{"type": "credit"}"#.utf8))
            #expect(update.status == 200)
            let json = try #require(update.json)
            #expect((json["newTotal"] as? [String: Any])?["amount"] as? String == "9.90")
            #expect(json["newShippingMethods"] == nil)
            #expect((json["errors"] as? [Any])?.isEmpty == true)
            let unknown = try await server.send("POST", "/api/orders/0000/payment-method", body: Array(#"{"type": "debit"}"#.utf8))
            #expect(unknown.status == 404)
            let malformed = try await server.send("POST", "/api/orders/\(id)/payment-method", body: Array("[]".utf8))
            #expect(malformed.status == 400)
        }
    }
}
