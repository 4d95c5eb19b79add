import ApplePay
import Crypto
import CurlClient
import Foundation
import OrchardCore
import OrchardTesting
import ProcessorClients
import Testing

/// The mock processors on loopback HTTPS and the real processor client for one of them,
/// configured through its driver as the server configures it, on a real libcurl client.
struct MandateFixture {
    let kind: MockProcessorSetup.Kind
    let mock: MockProcessors
    let processor: any PaymentProcessor
    let http: CurlHTTPClient
    /// The test Apple chain that signs tokens, and the merchant's processing key, for this test process.
    static let tokenChain = try! TestAppleChain.make()
    static let processingKey = P256.KeyAgreement.PrivateKey()

    /// Reads the test configuration's secrets and CA, as the server's configuration loader would.
    struct Values: ConfigurationReader {
        func read(_ reference: String, what: String) throws(ConfigurationError) -> [UInt8] {
            if reference.hasPrefix("env:"), let value = MockProcessorSetup.environment[String(reference.dropFirst(4))] {
                return Array(value.utf8)
            }
            guard reference == "ca.pem" else { throw ConfigurationError("\(what): \(reference) is not a test value") }
            return TestMaterial.shared.caPEM
        }

        func describe(_ reference: String) -> String { reference }
    }

    static func with(_ kind: MockProcessorSetup.Kind, _ body: (MandateFixture) async throws -> Void) async throws {
        let mock = try MockProcessors(
            serverIdentity: TestMaterial.shared.server, worldpay: MockProcessorSetup.worldpay, worldline: MockProcessorSetup.worldline)
        try await mock.start()
        do {
            let http = try CurlHTTPClient()
            let driver: any ProcessorDriver = kind == .worldpay ? WorldpayDriver() : WorldlineDriver()
            let settings = try driver.settings(from: MockProcessorSetup.section(kind, baseURL: mock.baseURL), values: Values())
            let processor = CurlProcessorMaker(http: http).processor(for: settings)
            #expect(processor.name == kind.processorName)
            try await body(MandateFixture(kind: kind, mock: mock, processor: processor, http: http))
        } catch {
            await mock.stop()
            throw error
        }
        await mock.stop()
    }

    static func order(total: Int64 = 990, currency: String = "EUR") -> OrderRecord {
        let priced = PricedOrder(
            currency: currency, lines: [], items: [], subtotal: total, shippingMethod: nil, couponCode: nil, discount: 0,
            shippingCountry: nil, total: total)
        return OrderRecord(
            id: RecordIdentifier.random(), merchantIdentifier: TestMaterial.merchantIdentifier, state: .pending, priced: priced,
            applicationData: [], createdAt: Date())
    }

    /// A shopper-present first payment of 9.90 EUR with a merchant token (MPAN), as decrypted.
    static func firstPayment(storing usage: CredentialUsage?, reference: String = "first-\(UUID().uuidString)") throws
        -> AuthorizationRequest
    {
        let token = try TokenMinter(chain: MandateFixture.tokenChain).mintEC(
            payload: TokenMinter.merchantTokenPayload(amount: 990, merchantTokenIdentifier: "DNITHE302100000000000001"),
            to: MandateFixture.processingKey.publicKey, merchantIdentifier: TestMaterial.merchantIdentifier)
        let key = try ProcessingKey(
            privateKeyPEM: MandateFixture.processingKey.pemRepresentation, merchantIdentifier: TestMaterial.merchantIdentifier)
        let payment = try TokenDecryptor(keys: [key]).decrypt(try token.decoded())
        return AuthorizationRequest(
            order: order(), token: PaymentToken(paymentData: token), payment: payment, reference: reference,
            cardholderName: "Camille Martin", storeCredential: usage)
    }

    static func mandate(_ kind: PaymentAgreement.Kind, _ credential: StoredCredential, processor: String) -> MandateRecord {
        MandateRecord(
            id: MandateRecord.newIdentifier(), merchantIdentifier: TestMaterial.merchantIdentifier, kind: kind, paymentId: "pay_first",
            orderId: "ord_first", processor: processor, credential: credential, merchantTokenIdentifier: "DNITHE302100000000000001",
            merchantTokenMetadata: nil, currency: "EUR", network: "masterCard", lastFour: "7840", description: "Orchard Coffee Club",
            createdAt: Date())
    }

    /// Pays a first payment that stores the credential and returns the mandate it sets up.
    func mandate(_ kind: PaymentAgreement.Kind) async throws -> MandateRecord {
        let outcome = try await processor.authorize(try Self.firstPayment(storing: CredentialUsage(kind)))
        #expect(outcome.status == .authorized)
        let credential = try #require(outcome.storedCredential)
        return Self.mandate(kind, credential, processor: processor.name)
    }

    /// A merchant-initiated charge of 12.50 EUR under `reference`.
    func charge(_ mandate: MandateRecord, _ reference: String, sends: Int = 1) async throws -> AuthorizationOutcome {
        try await processor.chargeMandate(
            MandateChargeRequest(mandate: mandate, order: Self.order(total: 1250), reference: reference, sends: sends))
    }

    /// The last request the mock received, and its JSON body.
    func lastSent() throws -> (request: MockProcessorRequest, body: [String: Any]) {
        let sent = try #require(mock.received.last)
        return (sent, try #require(try JSONSerialization.jsonObject(with: Data(sent.body)) as? [String: Any]))
    }

    var paymentsPath: String { "/v2/\(MockProcessorSetup.worldline.merchantId)/payments" }
}

/// Whether a JSON object is exactly this one: the same keys, the same values (JSON booleans
/// compare equal to 1 and 0 here, so the mocks check booleans themselves).
func same(_ actual: Any?, _ expected: [String: Any]) -> Bool {
    guard let actual = actual as? [String: Any] else { return false }
    return NSDictionary(dictionary: actual).isEqual(to: expected)
}

@Suite("Mandates through Worldpay Access and Worldline Direct: stored credentials, merchant-initiated charges, deletion")
struct MandateProcessorTests {
    static let kinds: [MockProcessorSetup.Kind] = [.worldpay, .worldlineEncrypted]

    @Test(
        "a first payment asked to store the credential sends the documented fields and gets the processor's token",
        arguments: MockProcessorSetup.Kind.allCases, [CredentialUsage.scheduled, .unscheduled])
    func firstPaymentStores(kind: MockProcessorSetup.Kind, usage: CredentialUsage) async throws {
        try await MandateFixture.with(kind) { fixture in
            let outcome = try await fixture.processor.authorize(try MandateFixture.firstPayment(storing: usage))
            #expect(outcome.status == .authorized)
            let stored = try #require(fixture.mock.storedTokens.first)
            #expect(fixture.mock.storedTokens.count == 1)
            #expect(stored.usage == usage.rawValue)
            #expect(outcome.storedCredential?.reference == stored.reference)
            #expect(outcome.storedCredential?.schemeReference == stored.schemeReference)
            let (_, body) = try fixture.lastSent()
            switch kind {
            case .worldpay:
                #expect(stored.schemeReference?.isEmpty == false, "Worldpay's scheme reference is kept for later charges")
                #expect(stored.reference.hasPrefix(fixture.mock.baseURL + "/tokens/"))
                let instruction = try #require(body["instruction"] as? [String: Any])
                let type = usage == .scheduled ? "subscription" : "unscheduled"
                #expect(same(instruction["customerAgreement"], ["type": type, "storedCardUsage": "first"]))
                #expect(same(instruction["tokenCreation"], ["type": "worldpay"]))
                let (request, _) = try fixture.lastSent()
                #expect(request.path == "/cardPayments/customerInitiatedTransactions" && body["channel"] as? String == "ecom")
            default:
                #expect(stored.schemeReference == nil && outcome.storedCredential?.schemeReference == nil)
                let input = try #require(body["mobilePaymentMethodSpecificInput"] as? [String: Any])
                let expected: [String: Any] =
                    usage == .scheduled
                    ? ["tokenize": true, "isRecurring": true, "recurring": ["recurringPaymentSequenceIndicator": "first"]]
                    : ["tokenize": true, "isRecurring": false]
                #expect(same(input["paymentProduct302SpecificInput"], expected))
            }
        }
    }

    @Test("a payment not asked to store anything sends no tokenization or agreement fields and gets no credential", arguments: kinds)
    func firstPaymentWithoutMandate(kind: MockProcessorSetup.Kind) async throws {
        try await MandateFixture.with(kind) { fixture in
            let outcome = try await fixture.processor.authorize(try MandateFixture.firstPayment(storing: nil))
            #expect(outcome.status == .authorized)
            #expect(outcome.storedCredential == nil)
            #expect(fixture.mock.storedTokens.isEmpty, "no token is issued unless asked for")
            let (_, body) = try fixture.lastSent()
            let instruction = body["instruction"] as? [String: Any] ?? [:]
            let input = body["mobilePaymentMethodSpecificInput"] as? [String: Any] ?? [:]
            #expect(instruction["customerAgreement"] == nil && instruction["tokenCreation"] == nil)
            #expect(input["paymentProduct302SpecificInput"] == nil)
        }
    }

    @Test("authorized without a token: the payment stands, with no stored credential", arguments: kinds)
    func authorizedWithoutToken(kind: MockProcessorSetup.Kind) async throws {
        try await MandateFixture.with(kind) { fixture in
            fixture.mock.withholdsTokens = true
            let outcome = try await fixture.processor.authorize(try MandateFixture.firstPayment(storing: .scheduled))
            #expect(outcome.status == .authorized)
            #expect(outcome.processorReference != nil)
            #expect(outcome.storedCredential == nil)
            #expect(fixture.mock.charges.map(\.state) == [.authorized])
        }
    }

    @Test(
        "a merchant-initiated charge sends exactly the documented fields and charges the stored token",
        arguments: kinds, [PaymentAgreement.Kind.recurring, .deferred, .automaticReload])
    func merchantInitiated(kind: MockProcessorSetup.Kind, agreement: PaymentAgreement.Kind) async throws {
        try await MandateFixture.with(kind) { fixture in
            let mandate = try await fixture.mandate(agreement)
            let reference = "mit-\(UUID().uuidString.prefix(8))"
            let outcome = try await fixture.charge(mandate, reference)
            #expect(outcome.status == .authorized)
            #expect(outcome.links["settle"] != nil && outcome.links["cancel"] != nil)
            let taken = try #require(fixture.mock.mitCharges.first)
            #expect(fixture.mock.mitCharges.count == 1)
            let usage = CredentialUsage(agreement).rawValue
            #expect(taken.token == mandate.credential.reference && taken.usage == usage && taken.state == .authorized)
            #expect(taken.amount == 1250 && taken.currency == "EUR" && taken.reference == reference)
            let (sent, body) = try fixture.lastSent()
            switch kind {
            case .worldpay:
                #expect(outcome.processorReference == reference)
                #expect(sent.method == "POST" && sent.path == "/cardPayments/merchantInitiatedTransactions")
                #expect(sent.header("Content-Type") == "application/vnd.worldpay.payments-v7+json")
                #expect(Set(body.keys) == ["transactionReference", "merchant", "instruction"], "no channel on a merchant-initiated charge")
                #expect(body["transactionReference"] as? String == reference)
                let scheme = try #require(mandate.credential.schemeReference)
                let expected: [String: Any] = [
                    "narrative": ["line1": "Orchard Test"], "value": ["currency": "EUR", "amount": 1250],
                    "paymentInstrument": ["type": "card/token", "href": mandate.credential.reference],
                    "customerAgreement": ["type": agreement == .recurring ? "subscription" : "unscheduled", "schemeReference": scheme],
                ]
                #expect(same(body["instruction"], expected))
                #expect(taken.schemeReference == scheme)
            default:
                #expect(outcome.processorReference == taken.id)
                #expect(sent.method == "POST" && sent.path == fixture.paymentsPath)
                #expect(sent.header("X-GCS-Idempotence-Key") == reference)
                #expect(Set(body.keys) == ["order", "cardPaymentMethodSpecificInput"])
                #expect(
                    same(
                        body["order"],
                        ["amountOfMoney": ["amount": 1250, "currencyCode": "EUR"], "references": ["merchantReference": reference]]))
                var expected: [String: Any] = [
                    "authorizationMode": "FINAL_AUTHORIZATION", "transactionChannel": "ECOMMERCE", "token": mandate.credential.reference,
                ]
                if agreement == .recurring {
                    expected["isRecurring"] = true
                } else {
                    expected["unscheduledCardOnFileRequestor"] = "merchantInitiated"
                    expected["unscheduledCardOnFileSequenceIndicator"] = "subsequent"
                }
                #expect(same(body["cardPaymentMethodSpecificInput"], expected))
            }
        }
    }

    @Test("a re-send of a charge's reference gets the first answer and is charged once, after an answer or after none", arguments: kinds)
    func resendChargesOnce(kind: MockProcessorSetup.Kind) async throws {
        try await MandateFixture.with(kind) { fixture in
            let mandate = try await fixture.mandate(.recurring)
            let first = try await fixture.charge(mandate, "mit-once")
            let again = try await fixture.charge(mandate, "mit-once", sends: 2)
            #expect(first.status == .authorized && again == first)
            #expect(fixture.mock.mitCharges.map(\.reference) == ["mit-once"])

            fixture.mock.behaviour = .dropAfterCharge
            await #expect(throws: ProcessorNoAnswer.self) { try await fixture.charge(mandate, "mit-dropped") }
            fixture.mock.behaviour = .authorize
            let resent = try await fixture.charge(mandate, "mit-dropped", sends: 2)
            #expect(resent.status == .authorized)
            #expect(fixture.mock.mitCharges.map(\.reference) == ["mit-once", "mit-dropped"], "the dropped charge is charged once")
            #expect(fixture.mock.charges.filter { $0.mode == "token" }.count == 2)
        }
    }

    @Test("a request the processor refuses is final on the first send only; a re-send's refusal is no answer", arguments: kinds)
    func refusedRequestOnResend(kind: MockProcessorSetup.Kind) async throws {
        try await MandateFixture.with(kind) { fixture in
            let mandate = try await fixture.mandate(.deferred)
            fixture.mock.behaviour = .status(400)
            let first = try await fixture.charge(mandate, "mit-400")
            #expect(first.status == .failed)
            await #expect(throws: ProcessorNoAnswer.self) { try await fixture.charge(mandate, "mit-400", sends: 2) }
            fixture.mock.behaviour = .status(503)
            await #expect(throws: ProcessorNoAnswer.self) { try await fixture.charge(mandate, "mit-503") }
            #expect(fixture.mock.mitCharges.isEmpty)
        }
    }

    @Test("a deleted credential is gone at the processor and cannot be charged; deleting it again is done", arguments: kinds)
    func deletedCannotBeCharged(kind: MockProcessorSetup.Kind) async throws {
        try await MandateFixture.with(kind) { fixture in
            let mandate = try await fixture.mandate(.automaticReload)
            #expect(try await fixture.charge(mandate, "mit-before").status == .authorized)
            try await fixture.processor.deleteCredential(mandate)
            #expect(fixture.mock.deletedTokens == [mandate.credential.reference])
            #expect(fixture.mock.storedTokens.map(\.deleted) == [true])
            let sent = try #require(fixture.mock.received.last)
            #expect(sent.method == "DELETE" && sent.body.isEmpty)
            if kind == .worldpay {
                #expect(fixture.mock.baseURL + sent.path == mandate.credential.reference)
                #expect(sent.header("Accept") == WorldpayProcessor.tokensMediaType)
            } else {
                #expect(sent.path == "/v2/\(MockProcessorSetup.worldline.merchantId)/tokens/\(mandate.credential.reference)")
                #expect(sent.header("Content-Type") == nil, "nothing to type: the signature covers an empty one")
            }

            let after = try await fixture.charge(mandate, "mit-after")
            #expect(after.status == .refused)
            #expect(fixture.mock.mitCharges.map(\.state) == [.authorized, .refused])
            try await fixture.processor.deleteCredential(mandate)
            #expect(fixture.mock.deletedTokens.count == 1, "the second deletion found nothing left to delete")
        }
    }

    @Test("Worldpay deletes a token only on its configured origin and under /tokens/: anything else is refused without a call")
    func worldpayDeleteStaysHome() async throws {
        try await MandateFixture.with(.worldpay) { fixture in
            let base = fixture.mock.baseURL
            let port = fixture.mock.port
            for href in [
                "https://evil.example/tokens/abc", "https://127.0.0.1:\(port + 1)/tokens/abc", "http://127.0.0.1:\(port)/tokens/abc",
                "https://user@127.0.0.1:\(port)/tokens/abc", "https://localhost:\(port)/tokens/abc",
                "\(base)/payments/settlements/full/abc",
                "/tokens/abc", "",
            ] {
                let before = fixture.mock.received.count
                let mandate = MandateFixture.mandate(.recurring, StoredCredential(reference: href), processor: "worldpay")
                await #expect(throws: ProcessorActionError.self, "\(href)") { try await fixture.processor.deleteCredential(mandate) }
                #expect(fixture.mock.received.count == before, "\(href) was called")
            }
            let mandate = MandateFixture.mandate(
                .recurring, StoredCredential(reference: "\(base)/tokens/never-issued"), processor: "worldpay")
            try await fixture.processor.deleteCredential(mandate)
            #expect(fixture.mock.received.last?.method == "DELETE", "a token on the configured origin is deleted (404: already gone)")
        }
    }

    @Test("the mocks refuse what the processors refuse: channel on a Worldpay MIT, isRecurring with unscheduled indicators at Worldline")
    func mocksAreStrict() async throws {
        try await MandateFixture.with(.worldpay) { fixture in
            let mandate = try await fixture.mandate(.recurring)
            let body: [String: Any] = [
                "transactionReference": "raw-1", "channel": "ecom", "merchant": ["entity": MockProcessorSetup.worldpay.entity],
                "instruction": [
                    "narrative": ["line1": "Orchard Test"], "value": ["currency": "EUR", "amount": 100],
                    "paymentInstrument": ["type": "card/token", "href": mandate.credential.reference],
                    "customerAgreement": ["type": "subscription"],
                ],
            ]
            let credentials = "\(MockProcessorSetup.worldpay.username):\(MockProcessorSetup.worldpay.password)"
            let response = try await fixture.raw(
                "/cardPayments/merchantInitiatedTransactions", body,
                headers: [
                    (name: "Content-Type", value: WorldpayProcessor.mediaType),
                    (name: "Authorization", value: "Basic \(Data(credentials.utf8).base64EncodedString())"),
                ])
            #expect(response.status == 400)
            let errors = response.json["validationErrors"] as? [[String: Any]] ?? []
            #expect(errors.first?["errorName"] as? String == "fieldIsNotAllowed" && errors.first?["message"] as? String == "$.channel")
            #expect(fixture.mock.mitCharges.isEmpty)
        }
        try await MandateFixture.with(.worldlineEncrypted) { fixture in
            let mandate = try await fixture.mandate(.recurring)
            let body: [String: Any] = [
                "order": ["amountOfMoney": ["amount": 100, "currencyCode": "EUR"], "references": ["merchantReference": "raw-2"]],
                "cardPaymentMethodSpecificInput": [
                    "authorizationMode": "SALE", "token": mandate.credential.reference, "isRecurring": true,
                    "unscheduledCardOnFileRequestor": "merchantInitiated", "unscheduledCardOnFileSequenceIndicator": "subsequent",
                ],
            ]
            let response = try await fixture.raw(
                fixture.paymentsPath, body, headers: fixture.worldlineHeaders(fixture.paymentsPath, key: "raw-2"))
            #expect(response.status == 400)
            #expect(fixture.mock.mitCharges.isEmpty)
        }
    }
}

extension MandateFixture {
    /// Sends a hand-made request to the mock, past the processor clients.
    func raw(_ path: String, _ body: [String: Any], headers: [(name: String, value: String)]) async throws -> (
        status: Int, json: [String: Any]
    ) {
        let response = try await http.execute(
            CurlRequest(
                method: "POST", url: mock.baseURL + path, headers: headers, body: Array(try JSONSerialization.data(withJSONObject: body)),
                trust: TLSTrust(caPEM: TestMaterial.shared.caPEM)))
        return (response.status, (try? JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any]) ?? [:])
    }

    /// Worldline's signed headers for a POST, with an idempotence key.
    func worldlineHeaders(_ path: String, key: String) -> [(name: String, value: String)] {
        let type = "application/json; charset=utf-8"
        let date = WorldlineProcessor.httpDate(Date())
        let gcs = [(name: "X-GCS-Idempotence-Key", value: key)]
        let authorization = WorldlineProcessor.authorization(
            method: "POST", contentType: type, date: date, gcsHeaders: gcs, path: path, keyId: MockProcessorSetup.worldline.apiKeyId,
            secret: MockProcessorSetup.worldline.secretApiKey)
        return [(name: "Content-Type", value: type), (name: "Date", value: date), (name: "Authorization", value: authorization)] + gcs
    }
}
