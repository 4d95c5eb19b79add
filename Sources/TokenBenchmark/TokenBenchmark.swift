import ApplePay
import CoreFoundation
import Crypto
import Foundation
import Glibc
import SwiftASN1
import _CryptoExtras

/// Full verify+decrypt throughput on one core for the real EC_v1 and RSA_v1 vectors, printed
/// beside the bound of the primitives each token needs, from `openssl speed` in the same run.
///
/// `TokenBenchmark [FIXTURES] [SECONDS] [ROUNDS]` measures; `TokenBenchmark --count ec|rsa TOKENS [FIXTURES]`
/// verifies and decrypts TOKENS tokens, each in `measuredCall`, for callgrind
/// (`Benchmarks/bench-tokens --count`), and prints the sizes the primitives' driver needs.
@main
struct TokenBenchmark {
    static func main() throws {
        let arguments = CommandLine.arguments
        if arguments.count > 3, arguments[1] == "--count" {
            let fixtures = arguments.count > 4 ? arguments[4] : "Tests/ApplePayTests/Fixtures"
            return try count(scheme: arguments[2], tokens: Int(arguments[3]) ?? 0, fixtures: fixtures)
        }
        let fixtures = arguments.count > 1 ? arguments[1] : "Tests/ApplePayTests/Fixtures"
        let seconds = arguments.count > 2 ? Double(arguments[2]) ?? 3 : 3
        let ec = try Case.ec(fixtures)
        let rsa = try Case.rsa(fixtures)
        // Rounds alternate Orchard's tokens with `openssl speed`, and the row shown is the round
        // with the median ratio: a slower minute of a shared VM then moves one round, not the table.
        let rounds = arguments.count > 3 ? max(1, Int(arguments[3]) ?? 3) : 3
        var measured: [(ec: Double, rsa: Double, speed: OpenSSLSpeed?)] = []
        for _ in 0..<rounds {
            let ecRate = try ec.measure(seconds: seconds)
            let rsaRate = try rsa.measure(seconds: seconds)
            measured.append(
                (ecRate, rsaRate, OpenSSLSpeed.measure(seconds: max(1, Int(seconds)), ecData: ec.sizes.data, rsaData: rsa.sizes.data)))
        }
        let local = (ec: try ec.swiftCryptoRate(seconds: seconds / 2), rsa: try rsa.swiftCryptoRate(seconds: seconds / 2))

        func row(_ name: String, _ rate: Double, _ bound: Bound?, _ local: Double) -> String {
            let boundText = bound.map { String(format: "%14.0f", 1e6 / $0.microseconds) } ?? "             ?"
            let ratio = bound.map { String(format: "%6.1f%%", 100 * rate * $0.microseconds / 1e6) } ?? "     ?"
            return "\(name)  \(String(format: "%8.0f", rate))  \(boundText)  \(ratio)  \(String(format: "%17.0f", local))  "
                + String(format: "%6.1f%%", 100 * rate / local)
        }
        // The round whose ratio is the median (the lower middle one of an even count).
        let ecRatios = measured.map { round in round.speed.map { round.ec * ec.bound($0).microseconds } ?? 0 }
        let rsaRatios = measured.map { round in round.speed.map { round.rsa * rsa.bound($0).microseconds } ?? 0 }
        let ecIndex = ecRatios.indices.sorted { ecRatios[$0] < ecRatios[$1] }[(rounds - 1) / 2]
        let rsaIndex = rsaRatios.indices.sorted { rsaRatios[$0] < rsaRatios[$1] }[(rounds - 1) / 2]
        let ecRow = (rate: measured[ecIndex].ec, bound: measured[ecIndex].speed.map { ec.bound($0) })
        let rsaRow = (rate: measured[rsaIndex].rsa, bound: measured[rsaIndex].speed.map { rsa.bound($0) })
        print("verify+decrypt on one core, \(seconds) s of CPU each (the chain's parse and signatures are checked once, then cached)")
        print("each round: Orchard's tokens, then `openssl speed`; the rows are the median round of \(rounds):")
        for (index, round) in measured.enumerated() {
            let ratios = [(round.ec, round.speed.map { ec.bound($0) }), (round.rsa, round.speed.map { rsa.bound($0) })].map { rate, bound in
                bound.map { String(format: "%.1f%%", 100 * rate * $0.microseconds / 1e6) } ?? "?"
            }
            print(
                "  round \(index + 1): EC_v1 \(String(format: "%.0f", round.ec))/s \(ratios[0]), RSA_v1 \(String(format: "%.0f", round.rsa))/s \(ratios[1])"
            )
        }
        print("scheme  tokens/s  openssl bound/s  of it  swift-crypto bound/s  of it")
        print(row("EC_v1 ", ecRow.rate, ecRow.bound, local.ec))
        print(row("RSA_v1", rsaRow.rate, rsaRow.bound, local.rsa))
        print("bound: 1 / the time of the cryptography each token needs, each primitive timed by `openssl speed` in that round:")
        for (name, bound) in [("EC_v1 ", ecRow.bound), ("RSA_v1", rsaRow.bound)] {
            print("  \(name) = " + (bound?.description ?? "? (openssl speed did not run or its output was not understood)"))
        }
        print("swift-crypto bound: the same primitives through swift-crypto (BoringSSL) in this process.")
    }

    static func count(scheme: String, tokens: Int, fixtures: String) throws {
        let token = scheme == "rsa" ? try Case.rsa(fixtures) : try Case.ec(fixtures)
        _ = try token.decryptor.decrypt(try token.verifier.verify(token.data, at: token.at).decoded)  // warm the chain cache, uncounted
        for _ in 0..<tokens { try measuredCall(token) }
        let sizes = token.sizes
        print("signed attributes \(sizes.signedAttributes) B, signed content \(sizes.signedContent) B, data \(sizes.data) B")
    }

    @inline(never) static func measuredCall(_ token: Case) throws {
        _ = try token.decryptor.decrypt(try token.verifier.verify(token.data, at: token.at).decoded)
    }

    /// Operations per second of this thread's CPU time, as `openssl speed` divides by its CPU time
    /// (not the wall clock): on a shared machine, other processes' load then moves neither.
    static func rate(seconds: Double, _ body: () throws -> Void) throws -> Double {
        func cpuSeconds() -> Double {
            var time = timespec()
            clock_gettime(CLOCK_THREAD_CPUTIME_ID, &time)
            return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
        }
        let start = cpuSeconds()
        var count = 0
        while cpuSeconds() - start < seconds {
            for _ in 0..<10 { try body() }
            count += 10
        }
        return Double(count) / (cpuSeconds() - start)
    }
}

/// The per-token cost of the primitives, each named with its count and time.
struct Bound: CustomStringConvertible {
    var parts: [(name: String, microseconds: Double)]

    var microseconds: Double { parts.reduce(0) { $0 + $1.microseconds } }

    var description: String {
        parts.map { "\($0.name) \(String(format: "%.1f", $0.microseconds)) µs" }.joined(separator: " + ")
            + String(format: " = %.1f µs", microseconds)
    }
}

/// SHA-256 work in 64-byte blocks, padding included: what one hash of `length` bytes costs.
func sha256Blocks(_ length: Int) -> Int { (length + 9 + 63) / 64 }
