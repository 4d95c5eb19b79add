import ApplePay
import ArgumentParser
import Crypto
import Foundation
import OrchardTesting
import _CryptoExtras

/// `orchard-sandbox token mint`: test tokens signed by the demo's test "Apple" chain.
struct Token: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Test payment tokens for the demo (decrypt them with `orchard token decrypt`).", subcommands: [Mint.self])

    struct Mint: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Mint a test payment token signed by the demo's test \"Apple\" chain (never trusted in production).",
            discussion: """
                Uses (and creates) the test chain and processing keys in --state-dir. Decrypt the result with \
                `orchard token decrypt --token FILE --key <state-dir>/test-processing-ec.key \
                --merchant-id merchant.dev.orchard.demo --trust-root <state-dir>/test-apple-root.pem`.
                """)

        @Option(help: "Folder of the demo's test PKI.")
        var stateDir: String = ".orchard/demo"

        @Option(help: "Amount in minor units (cents).")
        var amount: Int

        @Option(help: "ISO 4217 numeric currency code (978 = EUR, 840 = USD).")
        var currency: String = "978"

        @Flag(help: "Mint an RSA_v1 token instead of EC_v1.")
        var rsa = false

        @Option(help: "The request's applicationData (its SHA-256 goes into the token).")
        var applicationData: String?

        @Flag(help: "Force an ECDH shared secret with a leading zero byte (EC_v1).")
        var leadingZero = false

        func validate() throws {
            guard amount >= 0 else { throw ValidationError("--amount must not be negative") }
            guard currency.count == 3, currency.allSatisfy(\.isNumber) else {
                throw ValidationError("--currency is a 3-digit ISO 4217 numeric code, like 978")
            }
        }

        func run() throws {
            let environment = try DemoEnvironment.prepare(directory: stateDir)
            let minter = TokenMinter(chain: try environment.tokenChain())
            let keys = try environment.processingKeys()
            let payload = TokenMinter.samplePayload(amount: amount, currencyCode: currency)
            let hash = applicationData.map { Array(SHA256.hash(data: Array($0.utf8))) }
            let paymentData =
                rsa
                ? try minter.mintRSA(payload: payload, to: keys.rsa.publicKey, applicationDataHash: hash)
                : try minter.mintEC(
                    payload: payload, to: keys.ec.publicKey, merchantIdentifier: DemoEnvironment.merchantIdentifier,
                    applicationDataHash: hash, leadingZeroSecret: leadingZero)
            let token = PaymentToken(
                paymentData: paymentData,
                paymentMethod: .init(displayName: "Visa 1111", network: "Visa", type: "debit"),
                transactionIdentifier: paymentData.header.transactionId.uppercased())
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
            FileHandle.standardOutput.write(try encoder.encode(token) + Data([0x0A]))
        }
    }
}
