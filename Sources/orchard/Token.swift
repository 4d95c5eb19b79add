import ApplePay
import ArgumentParser
import Foundation
import OrchardRuntime
import SwiftASN1
import X509

struct Token: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Decrypt and inspect Apple Pay payment tokens; mint test tokens.",
        subcommands: [Decrypt.self])
}

extension Token {
    struct Decrypt: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Verify a payment token's Apple signature, decrypt it and print the payment data as JSON.",
            discussion: """
                Keys are PEM EC P-256 or RSA private keys (SEC1 or PKCS#8). Give each --key its --cert \
                (the processing certificate, for the merchant ID) in the same order, or one --merchant-id \
                for all keys. The key is chosen by the token's publicKeyHash. The output contains the \
                device account number and cryptogram: handle it as card data.
                """)

        @Option(help: "The token: the whole `payment.token` JSON or its `paymentData`.")
        var token: String

        @Option(help: "A processing private key (PEM); repeat for several.")
        var key: [String] = []

        @Option(help: "The processing certificate (PEM) of the --key at the same position; repeat.")
        var cert: [String] = []

        @Option(help: "The merchant identifier, instead of certificates.")
        var merchantId: String?

        @Option(help: "Verify as of this time (ISO 8601, e.g. 2021-09-01T19:04:00Z) instead of now.")
        var at: String?

        @Option(help: "Trust this root instead of Apple Root CA - G3 (test tokens only).")
        var trustRoot: String?

        @Option(help: "Maximum token age in seconds.")
        var maxAge: Int = 300

        func run() throws {
            do {
                try decrypt()
            } catch let error as ApplePayError {
                fail(error.message)
            } catch let error as ValidationError {
                fail(error.message)
            }
        }

        func decrypt() throws {
            guard !key.isEmpty else { throw ValidationError("at least one --key is required") }
            guard cert.isEmpty ? merchantId != nil : cert.count == key.count && merchantId == nil else {
                throw ValidationError("give one --cert per --key, or --merchant-id, not both")
            }
            let now = try at.map(parseDate) ?? Date()
            let keys = try key.enumerated().map { index, path throws -> ProcessingKey in
                let pem = try read(path, "key")
                if let merchantId { return try ProcessingKey(privateKeyPEM: pem, merchantIdentifier: merchantId) }
                return try ProcessingKey(privateKeyPEM: pem, certificatePEM: try read(cert[index], "certificate"))
            }
            var root = AppleRootCA.g3
            if let trustRoot {
                guard let certificate = try? Certificate(pemEncoded: try read(trustRoot, "root")) else {
                    throw ValidationError("\(trustRoot): not a PEM certificate")
                }
                root = certificate
            }
            let parsed = try PaymentToken.parse(Array(try read(token, "token").utf8))
            let verified = try TokenVerifier(root: root, policy: .init(maximumAge: TimeInterval(maxAge)))
                .verify(parsed.paymentData, at: now)
            let payment = try TokenDecryptor(keys: keys).decrypt(verified.decoded)
            FileHandle.standardOutput.write(Data(payment.json + [0x0A]))
        }

        func read(_ path: String, _ what: String) throws -> String {
            guard let text = try? String(contentsOfFile: path, encoding: .utf8) else {
                throw ValidationError("\(path): cannot read the \(what) file")
            }
            return text
        }
    }
}
