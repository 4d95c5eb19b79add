import ApplePay
import ArgumentParser
import CertificateTools
import Foundation
import OrchardRuntime
import SwiftASN1
import X509

struct Token: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Look inside an Apple Pay payment token: verify its signature and decrypt it (test tokens: orchard-sandbox token mint).",
        subcommands: [Decrypt.self])
}

extension Token {
    struct Decrypt: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Verify a payment token's Apple signature, decrypt it and print the payment data as JSON.",
            discussion: """
                Keys are EC P-256 or RSA private keys in any common form: PEM (SEC1, PKCS#1, PKCS#8, \
                with or without an EC PARAMETERS block, encrypted or not), DER, or a PKCS#12 file holding \
                the key and its processing certificate. Give each --key its --cert (the processing \
                certificate, for the merchant ID) in the same order, or one --merchant-id for all keys; a \
                PKCS#12 key brings its own certificate. Passwords come from --password-env or \
                --password-file, never the command line. The key is chosen by the token's publicKeyHash. \
                The output contains the device account number and cryptogram: handle it as card data.
                """)

        @Option(help: "The token: the whole `payment.token` JSON or its `paymentData`.")
        var token: String

        @Option(help: "A processing private key (PEM, DER or PKCS#12); repeat for several.")
        var key: [String] = []

        @Option(help: "The processing certificate (PEM or DER) of the --key at the same position; repeat.")
        var cert: [String] = []

        @Option(help: "An environment variable holding the password of encrypted keys.")
        var passwordEnv: String?

        @Option(help: "A file holding the password of encrypted keys (its trailing line break ignored).")
        var passwordFile: String?

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
                throw CommandFailure(error.message)
            } catch let error as ValidationError {
                throw CommandFailure(error.message)
            } catch let error as CertificateToolError {
                throw CommandFailure(error.message)
            }
        }

        func decrypt() throws {
            guard !key.isEmpty else { throw ValidationError("at least one --key is required") }
            let pkcs12Keys = key.filter { (try? bytes($0, "key")).map(KeyReader.isPKCS12) == true }.count
            if let refusal = Self.certificateRefusal(keys: key.count, pkcs12Keys: pkcs12Keys, certs: cert.count, merchantId: merchantId) {
                throw ValidationError(refusal)
            }
            let now = try at.map(parseDate) ?? Date()
            let password = try readPassword()
            let keys = try key.enumerated().map { index, path throws -> ProcessingKey in
                let (material, embedded) = try readKey(path, password: password)
                if let merchantId { return try ProcessingKey(privateKeyPEM: material.pem, merchantIdentifier: merchantId) }
                let certificate = try embedded ?? named(cert[index]) { try KeyReader.certificates(try bytes($0, "certificate"))[0] }
                return try ProcessingKey(privateKeyPEM: material.pem, certificatePEM: KeyReader.pem([certificate]))
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
            // The payment data is the shopper's device's words: JSON, with what JSON leaves raw escaped.
            FileHandle.standardOutput.write(Data((TerminalText.escapedJSON(String(decoding: payment.json, as: UTF8.self)) + "\n").utf8))
        }

        /// What is wrong with how the keys' merchant ID is given, if anything: each key needs its
        /// --cert, or one --merchant-id for all, or to be a PKCS#12 file that brings its certificate.
        static func certificateRefusal(keys: Int, pkcs12Keys: Int, certs: Int, merchantId: String?) -> String? {
            if certs > 0 && merchantId != nil { return "give --cert or --merchant-id, not both" }
            if certs > 0 && certs != keys { return "give one --cert per --key (\(keys) --key, \(certs) --cert), in the same order" }
            if certs == 0 && merchantId == nil && pkcs12Keys < keys {
                return
                    "the merchant ID is missing: give each --key its processing certificate with --cert (same order), or --merchant-id ID"
            }
            return nil
        }

        /// A key file in any form; a PKCS#12 file also brings its certificate.
        func readKey(_ path: String, password: String?) throws -> (PrivateKeyMaterial, Certificate?) {
            let data = try bytes(path, "key")
            if KeyReader.isPKCS12(data) {
                let contents = try named(path) { try KeyReader.pkcs12(data, password: password) }
                guard let key = contents.key else { throw ValidationError("\(path): the PKCS#12 file holds no private key") }
                return (key, contents.certificates.first)
            }
            return (try named(path) { try KeyReader.privateKey(data, password: password) }, nil)
        }

        func readPassword() throws -> String? {
            if let passwordEnv {
                guard let value = ProcessInfo.processInfo.environment[passwordEnv] else {
                    throw ValidationError("--password-env: \(passwordEnv) is not set")
                }
                return value
            }
            guard let passwordFile else { return nil }
            var text = try read(passwordFile, "password")
            while text.hasSuffix("\n") || text.hasSuffix("\r") { text.removeLast() }
            return text
        }

        /// Prefixes a reader's refusal with the file it was reading.
        func named<T>(_ path: String, _ body: (String) throws -> T) throws -> T {
            do {
                return try body(path)
            } catch let error as CertificateToolError {
                throw ValidationError("\(path): \(error.message)")
            }
        }

        func named<T>(_ path: String, _ body: () throws -> T) throws -> T {
            try named(path) { _ in try body() }
        }

        func bytes(_ path: String, _ what: String) throws -> [UInt8] {
            guard let data = FileManager.default.contents(atPath: path) else {
                throw ValidationError("\(path): cannot read the \(what) file")
            }
            return [UInt8](data)
        }

        func read(_ path: String, _ what: String) throws -> String {
            guard let text = try? String(contentsOfFile: path, encoding: .utf8) else {
                throw ValidationError("\(path): cannot read the \(what) file")
            }
            return text
        }
    }
}
