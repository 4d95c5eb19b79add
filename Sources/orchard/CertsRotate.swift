import ArgumentParser
import Foundation
import OrchardConfiguration
import OrchardRuntime
import OrchardServer
import OrchardServices

extension Certs {
    /// `orchard certs rotate …`: a merchant's identity or processing key replaced in four steps,
    /// each refusing to run before the one it needs, with the new key live beside the old one.
    struct Rotate: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Rotate a merchant's identity or processing key without an outage, step by step.",
            discussion: """
                csr: a new key and CSR; import: Apple's .cer, checked, the new processing key added \
                beside the old one; prove: the doctor decrypts a token for the new processing key, \
                or gets a merchant session with the new identity from the configured gateway; \
                retire: the old key leaves the configuration (identity: the new one takes its \
                place). The rotation's files and progress are kept in rotation/ beside the \
                configuration file. status (the default) says where a rotation stands.
                """,
            subcommands: [Status.self, CSR.self, Import.self, Prove.self, Retire.self],
            defaultSubcommand: Status.self)

        /// The options every step takes.
        struct Options: ParsableArguments {
            @Option(help: "identity or processing.") var type: Certs.CSR.Kind
            @Option(help: "The merchant ID, as merchants[].merchantIdentifier names it.") var merchant: String
            @Option(help: ArgumentHelp("The configuration file (JSON).", valueName: "file")) var config: String = "Config/orchard.json"

            func validate() throws {
                if type == .orderType {
                    throw ValidationError(
                        "a rotation covers a merchant's identity and processing certificates; for an Order Type ID certificate, make a key and CSR with `orchard certs csr --type order-type`, import Apple's .cer, point walletOrders at the new files and restart"
                    )
                }
            }

            /// The same step's command line, for "next:" lines.
            func command(_ step: String, _ extra: String = "") -> String {
                "orchard certs rotate \(step) --type \(type.rawValue) --merchant \(merchant) --config \(config)\(extra)"
            }
        }

        struct Status: AsyncParsableCommand {
            static let configuration = CommandConfiguration(abstract: "Say where the rotation stands and what to do next.")
            @OptionGroup var options: Options

            func run() async throws {
                let rotation = try Rotation(options)
                guard let state = try rotation.state() else {
                    say("no \(options.type.rawValue) rotation under way for \(options.merchant)")
                    say("next: \(rotation.start)")
                    return
                }
                say(
                    "\(options.type.rawValue) rotation of \(options.merchant): \(state.step.rawValue), files in \(rotation.path(state.folder))"
                )
                say("next: \(rotation.next(after: state.step))")
            }
        }

        struct CSR: AsyncParsableCommand {
            static let configuration = CommandConfiguration(abstract: "Step 1: a new key (mode 0600) and a CSR to upload to Apple.")
            @OptionGroup var options: Options

            func run() async throws { try Rotation(options).csr() }
        }

        struct Import: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                abstract: "Step 2: check Apple's .cer against the new key and add the new processing key beside the old one.")
            @OptionGroup var options: Options
            @Option(help: "The certificate downloaded from Apple.") var cer: String
            @Option(help: "Check validity at this ISO-8601 time instead of now.") var at: String?

            func run() async throws { try Rotation(options).importCertificate(cer, at: try at.map(parseDate) ?? Date()) }
        }

        struct Prove: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                abstract: "Step 3: the doctor decrypts a token for the new processing key, or gets a session with the new identity.")
            @OptionGroup var options: Options

            func run() async throws { try await Rotation(options).prove() }
        }

        struct Retire: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                abstract: "Step 4: remove the old key from the configuration, once the new one is proven.")
            @OptionGroup var options: Options

            func run() async throws { try Rotation(options).retire() }
        }
    }
}

/// Where a rotation stands, kept in `rotation/<merchant>.<type>.json` beside the configuration.
struct RotationState: Codable {
    enum Step: String, Codable {
        /// The new key and CSR are written.
        case csr
        /// Apple's certificate is checked and (processing) listed beside the old key.
        case imported
        /// The doctor proved the new key or identity.
        case proven
    }

    var step: Step
    /// The rotation's files, relative to the configuration's folder.
    var folder: String
    /// Base64 SHA-256 of the new certificate's public key (a token's `publicKeyHash`), from import on.
    var publicKeyHash: String?
    /// Processing: the entries listed before the new one, which retire removes.
    var oldKeys: [ConfigurationFile.ProcessingKeyFile]?
    /// The passed checks that proved the new key, and when.
    var proof: Proof?

    struct Proof: Codable {
        var publicKeyHash: String
        var at: Date
        var checks: [String]
    }
}
