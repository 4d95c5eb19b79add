import ApplePay
import ArgumentParser
import Crypto
import Foundation
import OrchardCore
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
                --merchant-id merchant.dev.orchard.demo --trust-root <state-dir>/test-apple-root.pem`. \
                With --payment-request ID, the token is bound to that payment request (applicationData \
                orchard-order:ID) and printed as the body POST /v1/payment-requests/ID/authorize takes, \
                {"token": …}; --amount is then the request's total (shipping included).
                """)

        @Option(help: "Folder of the demo's test PKI.")
        var stateDir: String = ".orchard/demo"

        @Option(help: "Amount in minor units (cents).")
        var amount: Int

        @Option(help: "ISO 4217 currency: numeric (978) or its letters (EUR).")
        var currency: String = "978"

        @Option(
            help: ArgumentHelp(
                "A payment request's ID (POST /v1/payment-requests): bind the token to it and print the body its authorize call takes.",
                valueName: "id"))
        var paymentRequest: String?

        @Flag(help: "Mint an RSA_v1 token instead of EC_v1.")
        var rsa = false

        @Option(help: "The request's applicationData (its SHA-256 goes into the token).")
        var applicationData: String?

        @Flag(help: "Force an ECDH shared secret with a leading zero byte (EC_v1).")
        var leadingZero = false

        @Option(
            help: ArgumentHelp(
                "Mint a merchant token (MPAN) payload with this merchantTokenIdentifier, as Apple gives for an agreement (recurring, deferred, automatic reload).",
                valueName: "id"))
        var merchantTokenId: String?

        func validate() throws {
            guard amount >= 0 else { throw ValidationError("--amount must not be negative") }
            guard numericCurrency != nil else {
                throw ValidationError("--currency is an ISO 4217 code: 3 digits like 978, or letters like EUR")
            }
            if let merchantTokenId, !MerchantTokenEvent.isValidIdentifier(merchantTokenId) {
                throw ValidationError("--merchant-token-id is 1 to 64 of A-Z a-z 0-9 . _ -")
            }
            if paymentRequest != nil && applicationData != nil {
                throw ValidationError("--payment-request sets the applicationData itself: leave out --application-data")
            }
        }

        /// `--currency` as the token's 3-digit code.
        var numericCurrency: String? {
            if currency.count == 3 && currency.allSatisfy(\.isNumber) { return currency }
            return Currency(code: currency.uppercased())?.numericCode
        }

        /// The applicationData the token is bound to: a payment request's, as Orchard gives it to
        /// Apple Pay (OrderRecord.binding), or --application-data.
        var boundApplicationData: [UInt8]? {
            if let paymentRequest { return OrderRecord.binding(orderId: paymentRequest) }
            return applicationData.map { Array($0.utf8) }
        }

        func run() throws {
            let environment = try DemoEnvironment.prepared(stateDir)
            let minter = TokenMinter(chain: try environment.tokenChain())
            let keys = try environment.processingKeys()
            let code = numericCurrency ?? currency
            let payload =
                merchantTokenId.map { TokenMinter.merchantTokenPayload(amount: amount, currencyCode: code, merchantTokenIdentifier: $0) }
                ?? TokenMinter.samplePayload(amount: amount, currencyCode: code)
            let hash = boundApplicationData.map { Array(SHA256.hash(data: $0)) }
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
            let body = paymentRequest == nil ? try encoder.encode(token) : try encoder.encode(["token": token])
            FileHandle.standardOutput.write(body + Data([0x0A]))
        }
    }
}
