import ApplePay
import CFuzzerDriver
import Foundation

/// One fuzz input: any bytes as a token, parsed and verified against Apple's root, and the
/// bytes alone as the CMS signature. Must never crash, only throw.
func fuzzTokenInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    guard let data else { return 0 }
    FuzzHarness.run(Array(UnsafeBufferPointer(start: data, count: size)))
    return 0
}

enum FuzzHarness {
    static let verifier = TokenVerifier()
    static let signingTime = Date(timeIntervalSince1970: 1_630_523_000)  // the gala vector's signing time

    static func run(_ bytes: [UInt8]) {
        if let token = try? PaymentToken.parse(bytes) {
            _ = try? verifier.verify(token.paymentData, at: signingTime)
        }
        // The raw bytes as a CMS signature, to reach the BER parser directly.
        let raw = PaymentData(
            version: "EC_v1", data: Data(repeating: 1, count: 32).base64EncodedString(), signature: Data(bytes).base64EncodedString(),
            header: .init(ephemeralPublicKey: "AA==", publicKeyHash: "AA==", transactionId: "00"))
        _ = try? verifier.verify(raw, at: signingTime)
    }
}

#if FUZZING
    /// With `-sanitize=fuzzer -DFUZZING` (scripts/fuzz) the compiler emits no main of its own;
    /// SwiftPM links this symbol as the entry point, and it hands control to libFuzzer.
    @_cdecl("TokenFuzzer_main")
    func fuzzerMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
        var count = argc
        var arguments = argv
        return LLVMFuzzerRunDriver(&count, &arguments) { data, size in fuzzTokenInput(data, size) }
    }
#else
    /// Without libFuzzer: runs each file given on the command line once (a corpus regression
    /// check or a crash reproducer).
    @main
    struct TokenFuzzer {
        static func main() throws {
            for path in CommandLine.arguments.dropFirst() {
                FuzzHarness.run([UInt8](try Data(contentsOf: URL(fileURLWithPath: path))))
            }
            print("ran \(CommandLine.arguments.count - 1) inputs without a crash")
        }
    }
#endif
