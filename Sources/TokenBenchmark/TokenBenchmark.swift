import ApplePay
import Crypto
import Foundation
import _CryptoExtras

/// Full verify+decrypt throughput on one core for the real EC_v1 and RSA_v1 vectors,
/// printed beside the bound of the primitives each token needs, measured by
/// `openssl speed` in the same run.
@main
struct TokenBenchmark {
    static func main() throws {
        let arguments = CommandLine.arguments
        let fixtures = arguments.count > 1 ? arguments[1] : "Tests/ApplePayTests/Fixtures"
        let seconds = arguments.count > 2 ? Double(arguments[2]) ?? 3 : 3

        let ec = try Case(
            fixtures: fixtures, folder: "gala-2021", key: "private_key.pem", certificate: "certificate.pem",
            signingTime: "2021-09-01T19:03:06Z")
        let rsa = try Case(
            fixtures: fixtures, folder: "basis-theory-rsa", key: "private.key", certificate: "apple_pay.pem",
            signingTime: "2024-01-08T17:54:44Z")
        let ecRate = try ec.measure(seconds: seconds)
        let rsaRate = try rsa.measure(seconds: seconds)

        let inProcess = try primitiveBounds(fixtures: fixtures, seconds: seconds)
        let speed = openSSLSpeed(seconds: max(1, Int(seconds)))
        func bound(_ costs: [Double?]) -> Double? {
            guard costs.allSatisfy({ ($0 ?? 0) > 0 }) else { return nil }
            return 1 / costs.reduce(0) { $0 + 1 / $1! }
        }
        // EC_v1: one ECDSA-P256 verify + one ECDH; RSA_v1: one RSA-2048 private operation + one public.
        let ecBound = bound([speed.ecdsaVerify, speed.ecdh])
        let rsaBound = bound([speed.rsaSign, speed.rsaVerify])
        func row(_ name: String, _ rate: Double, _ bound: Double?, _ local: Double) -> String {
            let boundText = bound.map { String(format: "%14.0f", $0) } ?? "             ?"
            let ratio = bound.map { String(format: "%6.1f%%", 100 * rate / $0) } ?? "     ?"
            return
                "\(name)  \(String(format: "%8.0f", rate))  \(boundText)  \(ratio)  \(String(format: "%17.0f", local))  \(String(format: "%6.1f%%", 100 * rate / local))"
        }
        print("verify+decrypt on one core, \(seconds) s each (chain check cached)")
        print("scheme  tokens/s  openssl bound/s  of it  swift-crypto bound/s  of it")
        print(row("EC_v1 ", ecRate, ecBound, inProcess.ec))
        print(row("RSA_v1", rsaRate, rsaBound, inProcess.rsa))
    }

    struct Case {
        let data: PaymentData
        let verifier = TokenVerifier()
        let decryptor: TokenDecryptor
        let at: Date

        init(fixtures: String, folder: String, key: String, certificate: String, signingTime: String) throws {
            let base = URL(fileURLWithPath: fixtures).appendingPathComponent(folder)
            func text(_ name: String) throws -> String { try String(contentsOf: base.appendingPathComponent(name), encoding: .utf8) }
            data = try PaymentToken.parse(Array(try text("token.json").utf8)).paymentData
            decryptor = TokenDecryptor(keys: [try ProcessingKey(privateKeyPEM: try text(key), certificatePEM: try text(certificate))])
            at = try Date(signingTime, strategy: .iso8601).addingTimeInterval(30)
        }

        func measure(seconds: Double) throws -> Double {
            _ = try decryptor.decrypt(try verifier.verify(data, at: at).decoded)  // warm the chain cache
            let clock = ContinuousClock()
            let start = clock.now
            var count = 0
            while clock.now - start < .milliseconds(Int(seconds * 1000)) {
                for _ in 0..<20 {
                    _ = try decryptor.decrypt(try verifier.verify(data, at: at).decoded)
                }
                count += 20
            }
            let elapsed = clock.now - start
            return Double(count) / (Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18)
        }
    }

    /// The same primitives through swift-crypto (BoringSSL), the library Orchard runs on.
    static func primitiveBounds(fixtures: String, seconds: Double) throws -> (ec: Double, rsa: Double) {
        let ecdhKey = P256.KeyAgreement.PrivateKey()
        let peer = P256.KeyAgreement.PrivateKey().publicKey
        let signer = P256.Signing.PrivateKey()
        let digest = SHA256.hash(data: Array("signed attributes".utf8))
        let ecSignature = try signer.signature(for: digest)
        let rsaSigner = try _RSA.Signing.PrivateKey(keySize: .bits2048)
        let rsaSignature = try rsaSigner.signature(for: digest, padding: .insecurePKCS1v1_5)
        let base = URL(fileURLWithPath: fixtures).appendingPathComponent("basis-theory-rsa")
        let rsaKey = try _RSA.Encryption.PrivateKey(
            pemRepresentation: String(contentsOf: base.appendingPathComponent("private.key"), encoding: .utf8))
        let token = try PaymentToken.parse([UInt8](Data(contentsOf: base.appendingPathComponent("token.json"))))
        let wrapped = try token.paymentData.decoded().keyMaterial
        let ecdh = try rate(seconds: seconds / 2) { _ = try ecdhKey.sharedSecretFromKeyAgreement(with: peer) }
        let ecdsa = try rate(seconds: seconds / 2) { _ = signer.publicKey.isValidSignature(ecSignature, for: digest) }
        let rsaPrivate = try rate(seconds: seconds / 2) { _ = try rsaKey.decrypt(wrapped, padding: .PKCS1_OAEP_SHA256) }
        let rsaPublic = try rate(seconds: seconds / 2) {
            _ = rsaSigner.publicKey.isValidSignature(rsaSignature, for: digest, padding: .insecurePKCS1v1_5)
        }
        return (1 / (1 / ecdh + 1 / ecdsa), 1 / (1 / rsaPrivate + 1 / rsaPublic))
    }

    static func rate(seconds: Double, _ body: () throws -> Void) throws -> Double {
        let clock = ContinuousClock()
        let start = clock.now
        var count = 0
        while clock.now - start < .milliseconds(Int(seconds * 1000)) {
            for _ in 0..<10 { try body() }
            count += 10
        }
        let elapsed = clock.now - start
        return Double(count) / (Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18)
    }

    struct Speed {
        var ecdh: Double?
        var ecdsaVerify: Double?
        var rsaSign: Double?
        var rsaVerify: Double?
    }

    static func openSSLSpeed(seconds: Int) -> Speed {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["openssl", "speed", "-seconds", String(seconds), "ecdhp256", "ecdsap256", "rsa2048"]
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = FileHandle.nullDevice
        guard (try? process.run()) != nil else { return Speed() }
        let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        var speed = Speed()
        for line in output.split(separator: "\n") {
            let numbers = line.split(separator: " ").compactMap { Double($0) }
            if line.contains("ecdh (nistp256)"), let last = numbers.last {
                speed.ecdh = last
            } else if line.contains("ecdsa (nistp256)"), numbers.count >= 2 {
                speed.ecdsaVerify = numbers[numbers.count - 1]
            } else if line.hasPrefix("rsa 2048 bits"), numbers.count >= 2 {
                (speed.rsaSign, speed.rsaVerify) = (numbers[numbers.count - 2], numbers[numbers.count - 1])
            }
        }
        return speed
    }
}
