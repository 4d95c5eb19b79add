import ApplePay
import Crypto
import CurlClient
import Foundation
import Logging
import OrchardConfiguration
import OrchardCore
import OrchardIntegrationTesting
import OrchardSQLite
import OrchardServer
import OrchardServerTesting
import OrchardServices
import OrchardTesting
import ProcessorClients
import Synchronization
import Testing

@Suite("Payments through Worldpay Access and Worldline Direct (mock processors over loopback HTTPS)")
struct ProcessorTests {
    @Test(
        "authorized: success, the processor got the right request, the payment keeps its reference and links",
        arguments: ProcessorFixture.Kind.allCases)
    func authorized(kind: ProcessorFixture.Kind) async throws {
        try await ProcessorFixture.with(kind) { fixture in
            let (id, request) = try await fixture.order()
            let (response, token) = try await fixture.pay(id, request)
            #expect(response.status == 200)
            #expect(response.json?["status"] as? String == "success")
            let charge = try #require(fixture.mock.charges.first)
            #expect(fixture.mock.charges.count == 1)
            #expect(charge.amount == 990 && charge.currency == "EUR")
            #expect(charge.reference == "\(id)-1")
            let sent = try #require(fixture.mock.received.last)
            let body = try #require(try JSONSerialization.jsonObject(with: Data(sent.body)) as? [String: Any])
            switch kind {
            case .worldpay:
                #expect(sent.header("Content-Type") == "application/vnd.worldpay.payments-v7+json")
                #expect(sent.header("Authorization")?.hasPrefix("Basic ") == true)
                let wallet = ((body["instruction"] as? [String: Any])?["paymentInstrument"] as? [String: Any])?["walletToken"] as? String
                let decoded = try JSONDecoder().decode(PaymentData.self, from: Data((wallet ?? "").utf8))
                #expect(decoded == token)
            case .worldlineEncrypted:
                #expect(charge.mode == "encrypted")
                let input = try #require(body["mobilePaymentMethodSpecificInput"] as? [String: Any])
                #expect(input["encryptedPaymentData"] as? String == token.data)
                #expect(input["ephemeralKey"] as? String == token.header.ephemeralPublicKey)
                #expect(input["publicKeyHash"] as? String == token.header.publicKeyHash)
                #expect(input["authorizationMode"] as? String == "FINAL_AUTHORIZATION")
                #expect(sent.header("X-GCS-Idempotence-Key") == "\(id)-1")
            case .worldlineDecrypted:
                #expect(charge.mode == "decrypted")
                let decrypted = try #require(
                    (body["mobilePaymentMethodSpecificInput"] as? [String: Any])?["decryptedPaymentData"] as? [String: Any])
                #expect(decrypted["dpan"] as? String == "4111111111111111")
                #expect(decrypted["expiryDate"] as? String == "1229")
                #expect(decrypted["eci"] as? String == "7")
                #expect(decrypted["cardholderName"] as? String == "Camille Martin")
                #expect((decrypted["cryptogram"] as? String)?.isEmpty == false)
            }
            let payment = try #require(try await fixture.server.store.payments(orderId: id).first)
            #expect(payment.state == .authorized)
            #expect(payment.processor == kind.processorName)
            #expect(payment.reference == "\(id)-1")
            #expect(payment.links["settle"] != nil && payment.links["cancel"] != nil)
            #expect(try await fixture.server.store.order(id: id)?.state == .paid)
            // Orchard decrypted the card in one mode: nothing on disk holds the device account number.
            for file in try FileManager.default.contentsOfDirectory(atPath: fixture.server.stateDirectory) {
                let data = try Data(contentsOf: URL(fileURLWithPath: fixture.server.stateDirectory).appendingPathComponent(file))
                #expect(data.range(of: Data("4111111111111111".utf8)) == nil, "\(file)")
            }
        }
    }

    @Test(
        "refused: failure with a shopper-safe message, the code kept, the order open; another card then pays",
        arguments: ProcessorFixture.Kind.allCases)
    func refused(kind: ProcessorFixture.Kind) async throws {
        try await ProcessorFixture.with(kind) { fixture in
            fixture.mock.behaviour = .refuse(code: "5", description: "Do not honour")
            let (id, request) = try await fixture.order()
            let (response, _) = try await fixture.pay(id, request)
            #expect(response.status == 402)
            #expect(response.json?["status"] as? String == "failure")
            let message = (response.json?["errors"] as? [[String: Any]])?.first?["message"] as? String ?? ""
            #expect(message.contains("declined"))
            #expect(!message.contains("honour"), "the processor's reason stays in the back office")
            let refused = try #require(try await fixture.server.store.payments(orderId: id).first)
            #expect(refused.state == .refused)
            #expect(refused.processorCode == "5")
            #expect(refused.processorMessage == "Do not honour")
            #expect(try await fixture.server.store.order(id: id)?.state == .open)

            fixture.mock.behaviour = .authorize
            let (retry, _) = try await fixture.pay(id, request)
            #expect(retry.status == 200)
            let payments = try await fixture.server.store.payments(orderId: id)
            #expect(payments.map(\.reference) == ["\(id)-1", "\(id)-2"], "a new attempt after a refusal gets a new reference")
            #expect(fixture.mock.charges.map(\.state) == [.refused, .authorized])
        }
    }

    @Test(
        "no definite answer (5xx, dropped connection, timeout, unreadable body): payment unknown, order frozen; the retry asks or re-sends the reference, and charges once",
        arguments: ProcessorFixture.Kind.allCases,
        [
            MockProcessorBehaviour.status(503), .dropAfterCharge, .hold, .unreadableAfterCharge(status: 201),
            .unreadableAfterCharge(status: 402),
        ])
    func unknownThenRetry(kind: ProcessorFixture.Kind, fault: MockProcessorBehaviour) async throws {
        // 3 s: only the held charge waits for it, and the first send must reach the mock before
        // it runs out (the mutual TLS handshake alone has taken over 1 s on a loaded machine; the
        // send then never arrived, and the early retry below was charged as a first send).
        try await ProcessorFixture.with(kind, timeout: 3000) { fixture in
            fixture.mock.behaviour = fault
            let (id, request) = try await fixture.order()
            let (response, _) = try await fixture.pay(id, request)
            #expect(response.status == 504)
            if fault == .hold { #expect(fixture.mock.isInProgress("\(id)-1"), "the slow charge reached the processor") }
            #expect(response.json?["status"] as? String == "failure")
            #expect(response.errorCode == "payment_unknown")
            let unknown = try #require(try await fixture.server.store.payments(orderId: id).first)
            #expect(unknown.state == .unknown)
            #expect(try await fixture.server.store.order(id: id)?.state == .unknown)
            let coupon = try await fixture.server.send("POST", "/api/orders/\(id)/coupon", body: Array(#"{"couponCode": "TEN"}"#.utf8))
            #expect(coupon.status == 409, "the amount cannot change while a charge may exist")

            fixture.mock.behaviour = .authorize
            // Worldpay is asked first: what it holds is recorded without a re-send, and what it
            // never got is re-sent once its records' 15-minute lag has passed since the send.
            let asked = kind == .worldpay
            if asked { fixture.clock.advance(901) }
            var sends = asked && fault != .status(503) ? 1 : 2
            if fault == .hold {
                // The slow charge is still running (held until the test ends it): the processor
                // answers "in progress", no outcome.
                let (early, _) = try await fixture.pay(id, request)
                #expect(early.status == 504)
                #expect(early.errorCode == "payment_unknown")
                #expect(try await fixture.server.store.payments(orderId: id).map(\.state) == [.unknown])
                // Retry once the processor has finished the slow charge.
                fixture.mock.finishHeldCharges()
                #expect(!fixture.mock.isInProgress("\(id)-1"))
                // Worldline's early retry was a re-send (answered "in progress"); Worldpay's only asked.
                sends = asked ? 1 : 3
            }
            let (retry, _) = try await fixture.pay(id, request)
            #expect(retry.status == 200)
            let payments = try await fixture.server.store.payments(orderId: id)
            #expect(payments.map(\.reference) == ["\(id)-1"], "the retry re-sends the unknown attempt's reference")
            #expect(payments.map(\.state) == [.authorized], "the processor's answer for that reference ends unknown")
            #expect(payments.first?.sends == sends)
            #expect(fixture.mock.charges.count == 1, "the shopper is charged once")
            #expect(fixture.mock.charges.first?.state == .authorized)
        }
    }

    @Test("the database failing after the processor charged: payment_unknown with the usual headers and body, and no second reference")
    func storeFailsAfterCharge() async throws {
        nonisolated(unsafe) var failing: FailingOrderPayments?
        try await ProcessorFixture.with(
            .worldlineEncrypted,
            repositories: { repositories in
                var repositories = repositories
                let payments = FailingOrderPayments(repositories.orderPayments)
                failing = payments
                repositories.orderPayments = payments
                return repositories
            }
        ) { fixture in
            let (id, request) = try await fixture.order()
            failing?.failing.store(true, ordering: .relaxed)
            let (response, _) = try await fixture.pay(id, request)
            #expect(response.status == 504)
            #expect(response.errorCode == "payment_unknown")
            #expect(response.json?["status"] as? String == "failure")
            #expect((response.json?["errors"] as? [[String: Any]])?.isEmpty == false)
            #expect(response.header("X-Content-Type-Options") == "nosniff")
            #expect(response.header("Content-Security-Policy")?.contains("default-src 'none'") == true)
            #expect(fixture.mock.charges.count == 1)
            failing?.failing.store(false, ordering: .relaxed)
            let (retry, _) = try await fixture.pay(id, request)
            #expect(retry.status == 504, "the attempt is still pending: no new reference")
            #expect(retry.errorCode == "payment_unknown")
            #expect(try await fixture.server.store.payments(orderId: id).map(\.state) == [.pending])
            #expect(fixture.mock.charges.count == 1)
        }
    }

    @Test("the processor refusing our credentials is a failure that charges nothing and keeps the order open")
    func badCredentials() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        try directory.write("wrong-password", Array("not-the-password\n".utf8))
        try await ProcessorFixture.with(.worldpay, password: directory.path("wrong-password")) { fixture in
            let (id, request) = try await fixture.order()
            let (response, _) = try await fixture.pay(id, request)
            #expect(response.status == 502)
            #expect(response.errorCode == "processor_rejected")
            let payment = try #require(try await fixture.server.store.payments(orderId: id).first)
            #expect(payment.state == .failed)
            #expect(payment.processorCode == "accessDenied")
            #expect(try await fixture.server.store.order(id: id)?.state == .open)
            #expect(fixture.mock.charges.isEmpty)
        }
    }

    @Test("secrets and card data never reach the logs", arguments: [ProcessorFixture.Kind.worldpay, .worldlineDecrypted])
    func noSecretsInLogs(kind: ProcessorFixture.Kind) async throws {
        let handler = CapturingLogHandler()
        try await ProcessorFixture.with(kind, logHandler: handler) { fixture in
            let (id, request) = try await fixture.order()
            _ = try await fixture.pay(id, request)
            fixture.mock.behaviour = .status(500)
            let (second, secondRequest) = try await fixture.order()
            _ = try await fixture.pay(second, secondRequest)
        }
        let text = handler.records.withLock { records in
            records.map { "\($0.message) \($0.metadata)" }.joined(separator: "\n")
        }
        #expect(text.contains("payment authorized"))
        for secret in [
            ProcessorFixture.worldpay.password, ProcessorFixture.worldline.secretApiKey, "4111111111111111",
            Data("\(ProcessorFixture.worldpay.username):\(ProcessorFixture.worldpay.password)".utf8).base64EncodedString(),
        ] {
            #expect(!text.contains(secret))
        }
    }

    @Test(
        "back office: settle and cancel follow the processor, once, and only for authorized payments",
        arguments: ProcessorFixture.Kind.allCases)
    func settleAndCancel(kind: ProcessorFixture.Kind) async throws {
        try await ProcessorFixture.with(kind, admin: true) { fixture in
            func admin(_ method: String, _ path: String) async throws -> CurlResponse {
                try await fixture.server.send(method, path, extraHeaders: MoreMerchants.authorization)
            }
            var paymentIds: [String] = []
            for _ in 0..<2 {
                let (id, request) = try await fixture.order()
                let (response, _) = try await fixture.pay(id, request)
                paymentIds.append(try #require(response.json?["paymentId"] as? String))
            }
            let settled = try await admin("POST", "/admin/payments/\(paymentIds[0])/settle")
            #expect(settled.status == 200)
            #expect(settled.json?["state"] as? String == "settled")
            let cancelled = try await admin("POST", "/admin/payments/\(paymentIds[1])/cancel")
            #expect(cancelled.status == 200)
            #expect(fixture.mock.charges.map(\.state) == [.settled, .cancelled])
            let settledPayment = try #require(try await fixture.server.store.payment(id: paymentIds[0]))
            #expect(settledPayment.links["settle"] != nil, "the authorization's links stay")
            if kind == .worldpay {
                // Worldpay hands out its refund links only in the settle answer.
                #expect(settledPayment.links["refund"]?.contains("/payments/settlements/refunds/full/") == true)
                #expect(settledPayment.links["partialRefund"]?.contains("/payments/settlements/refunds/partials/") == true)
            }
            let again = try await admin("POST", "/admin/payments/\(paymentIds[0])/settle")
            #expect(again.status == 409)
            #expect(again.errorCode == "invalid_state")

            let listed = try #require(try await admin("GET", "/admin/payments?state=settled").json?["payments"] as? [[String: Any]])
            #expect(listed.map { $0["id"] as? String } == [paymentIds[0]])
            #expect(try await admin("GET", "/admin/payments?state=nonsense").status == 400)
            #expect(try await fixture.server.send("GET", "/admin/payments").status == 401)
            #expect(try await admin("POST", "/admin/payments/nope/settle").status == 404)
        }
    }

    @Test("an operator resolves an unknown payment from the processor's records; only unknown ones")
    func resolveUnknown() async throws {
        try await ProcessorFixture.with(.worldpay, admin: true) { fixture in
            fixture.mock.behaviour = .status(502)
            let (id, request) = try await fixture.order()
            _ = try await fixture.pay(id, request)
            let unknown = try #require(try await fixture.server.store.payments(orderId: id).first)
            #expect(unknown.state == .unknown)
            func resolve(_ state: String) async throws -> CurlResponse {
                try await fixture.server.send(
                    "POST", "/admin/payments/\(unknown.id)/resolve", body: Array(#"{"state": "\#(state)"}"#.utf8),
                    extraHeaders: MoreMerchants.authorization)
            }
            #expect(try await resolve("settled").status == 400)
            let resolved = try await resolve("refused")
            #expect(resolved.status == 200)
            #expect(resolved.json?["state"] as? String == "refused")
            #expect(try await fixture.server.store.order(id: id)?.state == .open)
            #expect(try await resolve("authorized").status == 409)
        }
    }

    @Test("Worldline v1HMAC: the Date header is RFC 1123 and the signature equals openssl's HMAC-SHA256 of the documented subject")
    func worldlineSignature() async throws {
        #expect(WorldlineProcessor.httpDate(Date(timeIntervalSince1970: 0)) == "Thu, 01 Jan 1970 00:00:00 GMT")
        #expect(WorldlineProcessor.httpDate(Date(timeIntervalSince1970: 1_795_309_323)) == "Sun, 22 Nov 2026 01:02:03 GMT")
        let authorization = WorldlineProcessor.authorization(
            method: "POST", contentType: "application/json; charset=utf-8", date: "Sun, 22 Nov 2026 01:02:03 GMT",
            gcsHeaders: [(name: "X-GCS-Idempotence-Key", value: " order-1 "), (name: "X-GCS-ClientMetaInfo", value: "abc")],
            path: "/v2/PSPID/payments", keyId: "KEY1", secret: "s3cr3t")
        let subject =
            "POST\napplication/json; charset=utf-8\nSun, 22 Nov 2026 01:02:03 GMT\nx-gcs-clientmetainfo:abc\nx-gcs-idempotence-key:order-1\n/v2/PSPID/payments\n"
        let mac = try await OrchardProcess.tool("openssl", ["dgst", "-sha256", "-hmac", "s3cr3t", "-binary"], stdin: Array(subject.utf8))
        #expect(mac.status == 0 && mac.stdout.count == 32)
        #expect(authorization == "GCS v1HMAC:KEY1:\(Data(mac.stdout).base64EncodedString())")
    }

    @Test("processor configuration: secrets only from env or files, https, known hosts unless allowed")
    func configuration() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        var file = try ServerHarness.configurationFile(gatewayPort: 1, directory: directory)
        func resolve() throws -> ServerConfiguration {
            try ServerConfiguration.resolve(
                file, relativeTo: directory.url.path, environment: ProcessorFixture.environment, processors: ProcessorFactory.drivers)
        }
        func refused(_ processor: ProcessorSection, _ expected: String) {
            file.merchants[0].processor = processor
            #expect {
                try resolve()
            } throws: { error in
                (error as? ConfigurationError)?.message.contains(expected) == true
            }
        }
        let good = ProcessorFixture.processor(.worldpay, baseURL: "https://127.0.0.1:1")
        var literal = good
        literal["password"] = "wp-secret-password-1"
        refused(literal, "never the secret itself")
        var http = good
        http["baseURL"] = "http://127.0.0.1:1"
        refused(http, "https origin")
        var strange = good
        strange["allowNonProductionHost"] = nil
        refused(strange, "allowNonProductionHost")
        var noEntity = good
        noEntity["entity"] = nil
        refused(noEntity, "entity is required")
        refused(.init(type: "stripe"), "record, worldpay or worldline")
        var mode = ProcessorFixture.processor(.worldlineEncrypted, baseURL: "https://127.0.0.1:1")
        mode["authorizationMode"] = "PRE_AUTH"
        refused(mode, "FINAL_AUTHORIZATION or SALE")
        var timeout = good
        timeout["timeoutMilliseconds"] = 30_000
        refused(timeout, "1000–24000")

        var typo = good
        typo["narative"] = "Orchard"
        refused(typo, "narative is not a worldpay setting")
        var wrongType = good
        wrongType["timeoutMilliseconds"] = "20000"
        refused(wrongType, "timeoutMilliseconds must be a whole number")

        file.merchants[0].processor = ProcessorSection(
            type: "worldpay", ["entity": "E", "username": "env:WP_USERNAME", "password": "env:WP_PASSWORD"])
        let production = try resolve()
        let settings = try #require(production.merchants[0].processor as? WorldpaySettings)
        #expect(settings.connection.baseURL == "https://access.worldpay.com")
        #expect(settings.connection.isProductionHost)
        #expect(settings.connection.owns("https://access.worldpay.com/payments/settlements/full/x"))
        #expect(!settings.connection.owns("https://evil.example/payments/settlements/full/x"))
        #expect(!settings.connection.owns("http://access.worldpay.com/x"))
        #expect(!settings.connection.owns("https://access.worldpay.com:8443/x"))
        #expect("\(settings.password)" == "Secret(redacted)")
    }
}
