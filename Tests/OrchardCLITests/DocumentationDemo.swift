import ApplePay
import Crypto
import CurlClient
import Foundation
import OrchardIntegrationTesting
import OrchardServerTesting
import OrchardTesting
import Testing

/// A live `orchard-sandbox demo` for the pages' blocks, as a platform integrator too: a mock Worldpay that stores credentials,
/// webhooks to a receiver of the test's mid-rotation (a `whsec_` secret and an older one), JSON
/// logs in a file; and the payments-API calls the test makes to give placeholders their state.
final class DocumentationDemo: Sendable {
    let directory: TemporaryDirectory
    let process: ChildProcess
    let port: Int
    let receiver: MockWebhookReceiver
    let client: CurlHTTPClient
    let environment: DemoEnvironment

    var stateDirectory: String { directory.path("state") }
    var server: String { "http://127.0.0.1:\(port)" }
    var log: String { (try? String(contentsOfFile: directory.path("demo.log"), encoding: .utf8)) ?? "" }

    /// Starts the demo in a new folder (not a checkout: its built-in catalogue) and waits until it
    /// says where it listens.
    init() async throws {
        let directory = try TemporaryDirectory()
        let receiver = MockWebhookReceiver(secret: "unused: the blocks verify")
        _ = try await receiver.start()
        let log = directory.path("demo.log")
        let process = try ChildProcess(
            OrchardProcess.sandbox.path,
            [
                "demo", "--port", "0", "--state-dir", directory.path("state"), "--processor", "worldpay", "--webhook-url", receiver.url,
                "--webhook-rotation", "--platform", "--wallet-orders", "--log-format", "json", "--log-level", "info",
            ], currentDirectory: directory.url.path, output: .file(log))
        let found = try? await Eventually.value { () -> Int? in
            let text = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
            guard process.isRunning || text.contains("checkout page:") else { return -1 }
            guard let match = text.firstMatch(of: /checkout page:\s+http:\/\/localhost:(\d+)\//) else { return nil }
            return Int(match.1)
        }
        guard let found, found > 0 else {
            process.send(SIGTERM)
            _ = await process.waitOffPool()
            await receiver.stop()
            let text = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
            directory.remove()
            throw DocumentationBlockFailure("the demo did not start:\n\(text)")
        }
        (self.directory, self.receiver, self.process, port) = (directory, receiver, process, found)
        client = try CurlHTTPClient(configuration: .init(allowedSchemes: ["http"]))
        environment = try DemoEnvironment.prepare(directory: directory.path("state"))
    }

    /// Stops the demo (SIGTERM, waited for off the pool) and the receiver.
    func stop() async {
        process.send(SIGTERM)
        _ = await process.waitOffPool()
        await receiver.stop()
        client.shutdown()
        directory.remove()
    }

    /// The demo's secrets: the current `whsec_` one and the older one it replaces.
    func secret(_ name: String) throws -> String {
        try String(contentsOfFile: directory.path("state/\(name)"), encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    func api(_ method: String, _ path: String, key: String, body: String? = nil) async throws -> [String: Any] {
        var headers: [(name: String, value: String)] = [(name: "Authorization", value: "Bearer \(key)")]
        if body != nil {
            headers += [(name: "Content-Type", value: "application/json"), (name: "Idempotency-Key", value: UUID().uuidString)]
        }
        let response = try await client.execute(
            CurlRequest(method: method, url: server + path, headers: headers, body: body.map { Array($0.utf8) }))
        guard (200..<300).contains(response.status), let json = response.json else {
            throw DocumentationBlockFailure(
                "\(method) \(path) answered \(response.status): \(String(decoding: response.body, as: UTF8.self))")
        }
        return json
    }

    /// The IDs of every payment the demo holds, from its admin API.
    func paymentIDs() async throws -> [String] {
        let response = try await client.execute(
            CurlRequest(url: server + "/admin/payments", headers: [(name: "Authorization", value: "Bearer \(try secret("admin-token"))")]))
        return (response.json?["payments"] as? [[String: Any]] ?? []).compactMap { $0["id"] as? String }
    }

    /// The in-app body for payment request `request` (as `POST /v1/payment-requests` answered it): a
    /// test token for its total, bound to it by its application data, as the app would send it;
    /// with `merchantToken`, a merchant token (a mandate's first payment).
    func tokenBody(for request: [String: Any], merchantToken: String? = nil) throws -> [UInt8] {
        let apple = request["paymentRequest"] as? [String: Any] ?? [:]
        let applicationData = Data(base64Encoded: apple["applicationData"] as? String ?? "") ?? Data()
        let total = request["total"] as? Int ?? 0
        let payload =
            merchantToken.map { TokenMinter.merchantTokenPayload(amount: total, merchantTokenIdentifier: $0) }
            ?? TokenMinter.samplePayload(amount: total)
        let token = try TokenMinter(chain: environment.tokenChain()).mintEC(
            payload: payload, to: environment.processingKeys().ec.publicKey, merchantIdentifier: DemoEnvironment.merchantIdentifier,
            applicationDataHash: Array(SHA256.hash(data: applicationData)))
        let payment = PaymentToken(
            paymentData: token, paymentMethod: .init(displayName: "Visa 1111", network: "Visa", type: "debit"),
            transactionIdentifier: token.header.transactionId)
        let tokenJSON = try JSONSerialization.jsonObject(with: JSONEncoder().encode(payment))
        return Array(try JSONSerialization.data(withJSONObject: ["token": tokenJSON]))
    }

    /// Apple's card update for a mandate's merchant token, as a test in another process sends it:
    /// `POST /_mock/token-events` on the demo's gateway (mutual TLS with the demo's merchant
    /// identity) with `tokenMetadata`, which the gateway encrypts to the demo merchant's key and
    /// signs; the demo then fetches the event and sends the `mandate.updated` the pages show.
    func sendCardUpdate(merchantToken: String) async throws {
        guard let match = log.firstMatch(of: /mock Apple gateway: https:\/\/127\.0\.0\.1:(\d+)/), let gatewayPort = Int(match.1) else {
            throw DocumentationBlockFailure("the demo did not say where its mock gateway listens")
        }
        let body = """
            {"eventType": "UPDATED_METADATA", "merchantTokenIdentifier": "\(merchantToken)",
             "tokenNotificationURL": "\(server)/apple-pay/token-events/\(DemoEnvironment.merchantIdentifier)",
             "tokenMetadata": {"expirationDate": "301231", "mpan": "5204240750197840", "mpanId": "DNITHE000000000000000048"}}
            """
        let http = try CurlHTTPClient()
        defer { http.shutdown() }
        let state = { (name: String) in Array(try String(contentsOfFile: self.directory.path("state/\(name)"), encoding: .utf8).utf8) }
        var request = CurlRequest(
            method: "POST", url: "https://127.0.0.1:\(gatewayPort)/_mock/token-events",
            headers: [(name: "Content-Type", value: "application/json")], body: Array(body.utf8),
            identity: .pem(certificate: try state("test-merchant-identity.pem"), key: try state("test-merchant-identity.key")),
            trust: .caPEM(try state("test-ca.pem")))
        request.timeouts = CurlTimeouts(connect: .seconds(10), total: CurlTimeouts.maximumTotal)
        let answer = try await http.execute(request)
        guard answer.status == 200, answer.json?["status"] as? Int == 200 else {
            throw DocumentationBlockFailure(
                "the card update was not notified: \(answer.status) \(String(decoding: answer.body, as: UTF8.self))")
        }
    }

    /// Pays payment request `request` through the in-app route; the payment as answered.
    func pay(_ request: [String: Any], key: String, merchantToken: String? = nil) async throws -> [String: Any] {
        let id = request["id"] as? String ?? ""
        let body = String(decoding: try tokenBody(for: request, merchantToken: merchantToken), as: UTF8.self)
        let answer = try await api("POST", "/v1/payment-requests/\(id)/authorize", key: key, body: body)
        guard let payment = answer["payment"] as? [String: Any], payment["state"] as? String == "authorized" else {
            throw DocumentationBlockFailure("the test's payment of \(id) was not authorized: \(answer)")
        }
        return payment
    }
}
