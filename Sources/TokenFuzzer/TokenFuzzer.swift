import ApplePay
import Foundation

/// libFuzzer entry point: any bytes as a token, parsed and verified against Apple's root,
/// and the signature field alone as BER. Must never crash, only throw.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzTokenInput(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    FuzzHarness.run(bytes)
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

#if !FUZZING
    /// Without libFuzzer: runs each file given on the command line through the harness
    /// (a regression check for a corpus or a crash reproducer).
    @main
    struct TokenFuzzerRegression {
        static func main() throws {
            for path in CommandLine.arguments.dropFirst() {
                FuzzHarness.run([UInt8](try Data(contentsOf: URL(fileURLWithPath: path))))
            }
            print("ran \(CommandLine.arguments.count - 1) inputs without a crash")
        }
    }
#endif
