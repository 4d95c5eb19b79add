import ApplePay
import ArgumentParser
import Crypto
import CurlClient
import Foundation
import OrchardConfiguration
import OrchardServices
import OrchardTesting

/// `orchard-bench authorize-setup`: the demo's test PKI and an `orchard.json` whose merchant
/// records payments (no processor), trusts the test token root and listens on `--server-port`.
struct AuthorizeSetup: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "authorize-setup", abstract: "Write orchard.json for the authorize benchmark into --state-dir.")

    @Option(help: "Folder for the test PKI, the configuration and the server's state.")
    var stateDir: String

    @Option(help: "Port the server listens on.")
    var serverPort: Int

    func run() throws {
        let environment = try DemoEnvironment.prepare(directory: stateDir)
        // Nothing in this benchmark asks Apple's gateway for a session: port 9 (discard) is never dialled.
        let path = try environment.writeServerConfiguration(
            gatewayPort: 9, serverPort: serverPort, publicDirectory: nil, catalogue: try environment.builtInCatalogue())
        print(path)
    }
}

/// `orchard-bench authorize-tokens`: `--count` orders created through the running server's own
/// `POST /api/orders` (whatever store it uses), and for each a fresh EC_v1 token bound to it (its
/// own transaction ID, signed now), one `POST /api/apple-pay/authorize` body per line. Minting
/// here, before the load, keeps the client's crypto off the cores the server is measured on.
struct AuthorizeTokens: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "authorize-tokens", abstract: "Create orders on the server and write one authorize body per line.")

    @Option(help: "The folder `authorize-setup` prepared.")
    var stateDir: String

    @Option(help: "The server's base URL, e.g. http://127.0.0.1:8080.")
    var server: String

    @Option(help: "How many orders and tokens.")
    var count: Int

    @Option(help: "File for the request bodies, one JSON object per line.")
    var out: String

    struct Created: Decodable {
        var orderId: String
        var paymentRequest: ApplePayPaymentRequest
    }

    struct Body: Encodable {
        struct Payment: Encodable { var token: PaymentToken }
        var orderId: String
        var payment: Payment
    }

    func run() async throws {
        let environment = try DemoEnvironment.prepare(directory: stateDir)
        let minter = TokenMinter(chain: try environment.tokenChain())
        let recipient = try environment.processingKeys().ec.publicKey
        let client = try CurlHTTPClient(configuration: .init(allowedSchemes: ["http"]))
        defer { client.shutdown() }
        let url = server + "/api/orders"
        let lines = try await withThrowingTaskGroup(of: [UInt8].self) { group in
            var lines: [[UInt8]] = []
            lines.reserveCapacity(count)
            for index in 0..<count {
                // 32 in flight: enough to keep the server's writes batched, few enough to stay gentle.
                if index >= 32, let line = try await group.next() { lines.append(line) }
                group.addTask { try await Self.body(client: client, url: url, minter: minter, recipient: recipient) }
            }
            for try await line in group { lines.append(line) }
            return lines
        }
        var file = Data()
        for line in lines {
            file.append(contentsOf: line)
            file.append(0x0A)
        }
        try file.write(to: URL(fileURLWithPath: out))
    }

    static func body(client: CurlHTTPClient, url: String, minter: TokenMinter, recipient: P256.KeyAgreement.PublicKey) async throws
        -> [UInt8]
    {
        let answer = try await client.execute(
            CurlRequest(
                method: "POST", url: url, headers: [("Content-Type", "application/json")],
                body: Array(#"{"items":[{"productId":"apple-box","quantity":1}]}"#.utf8)))
        guard answer.status == 201 else {
            throw ValidationError("POST /api/orders answered \(answer.status): \(String(decoding: answer.body, as: UTF8.self))")
        }
        let created = try JSONDecoder().decode(Created.self, from: Data(answer.body))
        let request = created.paymentRequest
        let currency = try require(Currency(code: request.currencyCode), "a known currency, not \(request.currencyCode)")
        let amount = try require(minorUnits(request.total.amount, exponent: currency.exponent), "a decimal total")
        let applicationData = try require(Data(base64Encoded: request.applicationData), "base64 applicationData")
        let data = try minter.mintEC(
            payload: TokenMinter.samplePayload(amount: amount, currencyCode: currency.numericCode), to: recipient,
            merchantIdentifier: DemoEnvironment.merchantIdentifier, applicationDataHash: Array(SHA256.hash(data: applicationData)))
        let token = PaymentToken(
            paymentData: data, paymentMethod: .init(displayName: "Visa 1111", network: "Visa", type: "debit"),
            transactionIdentifier: data.header.transactionId.uppercased())
        return Array(try JSONEncoder().encode(Body(orderId: created.orderId, payment: .init(token: token))))
    }

    /// "17.80" with exponent 2 → 1780.
    static func minorUnits(_ decimal: String, exponent: Int) -> Int? {
        let parts = decimal.split(separator: ".", omittingEmptySubsequences: false)
        guard (1...2).contains(parts.count), let whole = Int(parts[0]) else { return nil }
        let fraction = parts.count == 2 ? String(parts[1]) : ""
        guard fraction.count <= exponent else { return nil }
        let padded = fraction + String(repeating: "0", count: exponent - fraction.count)
        let scale = (0..<exponent).reduce(1) { value, _ in value * 10 }
        return whole * scale + (padded.isEmpty ? 0 : Int(padded) ?? 0)
    }
}

/// A missing value is a clear error, not a crash.
func require<T>(_ value: T?, _ what: String) throws -> T {
    guard let value else { throw ValidationError("expected \(what)") }
    return value
}
