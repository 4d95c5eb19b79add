import CFuzzerDriver
import Foundation

/// The fuzz targets, one binary: `FUZZ_TARGET` names the one to run (`token` when unset), so
/// libFuzzer's own re-executions (`-fork`, `-merge`) run the same target as the parent.
/// Every target must never crash, only throw or return; some also check a rule (an oracle) and
/// trap when the code under test breaks it.
enum FuzzTarget: String, CaseIterable {
    /// Token JSON parsed and verified against Apple's root, and the bytes as a CMS signature.
    case token
    /// The shop's app body, `{"token": PKPaymentToken}` (``InAppPayment/token(from:)``).
    case inapp
    /// `paymentData` decoded and its fields decoded, and the bytes as decrypted plaintext.
    case paymentdata
    /// Apple's merchant token event body, and a notification's event ID and merchant segment.
    case tokenevent
    /// Worldpay's and Worldline's answers, read into outcomes: status and function from the
    /// first two bytes, the body from the rest.
    case processors
    /// Google Pay: `paymentMethodData` as a page or app posts it, the ECv2 token verified, a
    /// `keys.json`, and the bytes as a decrypted message.
    case googlepay

    func run(_ bytes: [UInt8]) {
        switch self {
        case .token: TokenTarget.run(bytes)
        case .inapp: InAppTarget.run(bytes)
        case .paymentdata: PaymentDataTarget.run(bytes)
        case .tokenevent: TokenEventTarget.run(bytes)
        case .processors: ProcessorAnswerTarget.run(bytes)
        case .googlepay: GooglePayTarget.run(bytes)
        }
    }

    /// The target `FUZZ_TARGET` names; exits with a usage message for a name that is none.
    static func fromEnvironment() -> FuzzTarget {
        let name = ProcessInfo.processInfo.environment["FUZZ_TARGET"] ?? FuzzTarget.token.rawValue
        guard let target = FuzzTarget(rawValue: name) else {
            FileHandle.standardError.write(
                Data("FUZZ_TARGET=\(name) is no target; one of: \(allCases.map(\.rawValue).joined(separator: ", "))\n".utf8))
            exit(2)
        }
        return target
    }
}

/// Read once, before the first input: libFuzzer's callback is a C function and captures nothing.
let selectedTarget = FuzzTarget.fromEnvironment()

/// One fuzz input, handed to the selected target.
func fuzzInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    guard let data else { return 0 }
    selectedTarget.run(Array(UnsafeBufferPointer(start: data, count: size)))
    return 0
}

#if FUZZING
    /// With `-sanitize=fuzzer -DFUZZING` (scripts/fuzz) the compiler emits no main of its own;
    /// SwiftPM links this symbol as the entry point, and it hands control to libFuzzer.
    @_cdecl("TokenFuzzer_main")
    func fuzzerMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
        _ = selectedTarget
        var count = argc
        var arguments = argv
        return LLVMFuzzerRunDriver(&count, &arguments) { data, size in fuzzInput(data, size) }
    }
#else
    /// Without libFuzzer: runs each file given on the command line once through the
    /// `FUZZ_TARGET` target (a corpus regression check or a crash reproducer).
    @main
    struct TokenFuzzer {
        static func main() throws {
            let target = selectedTarget
            for path in CommandLine.arguments.dropFirst() {
                target.run([UInt8](try Data(contentsOf: URL(fileURLWithPath: path))))
            }
            print("\(target.rawValue): ran \(CommandLine.arguments.count - 1) inputs without a crash")
        }
    }
#endif
