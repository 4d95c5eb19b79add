import ApplePay
import ArgumentParser
import CertificateTools
import Foundation
import OrchardRuntime
import X509

/// `orchard certs …`: the keys and certificates Apple asks for.
struct Certs: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Apple Pay's two certificates: create a key and CSR for Apple, import the .cer Apple issues, inspect a file, rotate.",
        subcommands: [CSR.self, Import.self, Inspect.self, Rotate.self])

    struct CSR: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Create a private key and a certificate signing request to upload to Apple.",
            discussion: """
                identity: RSA-2048 key + CSR for the Merchant Identity certificate (merchant sessions, \
                domain registration). processing: EC P-256 key + CSR for the Payment Processing \
                certificate (tokens are encrypted to it). order-type: RSA-2048 key + CSR for an \
                Order Type ID certificate (Wallet orders; give --order-type-id instead of \
                --merchant-id). The key is written with mode 0600.
                """)

        enum Kind: String, ExpressibleByArgument, CaseIterable {
            case identity, processing
            case orderType = "order-type"
        }

        @Option(
            help: "Which certificate: identity (merchant sessions), processing (tokens are encrypted to it) or order-type (Wallet orders).")
        var type: Kind
        @Option(help: ArgumentHelp("The merchant ID (merchant.com.example.shop), for identity and processing.", valueName: "id"))
        var merchantId: String?
        @Option(help: ArgumentHelp("The Order Type ID (order.com.example.shop), for order-type.", valueName: "id"))
        var orderTypeId: String?
        @Option(help: ArgumentHelp("The folder to write <type>.key and <type>.csr into.", valueName: "folder")) var out: String
        @Flag(help: "Replace an existing key and CSR.") var force = false

        func validate() throws {
            switch (type, merchantId, orderTypeId) {
            case (.orderType, nil, .some), (.identity, .some, nil), (.processing, .some, nil): return
            case (.orderType, _, _):
                throw ValidationError("--type order-type takes --order-type-id (order.com.example.shop), not --merchant-id")
            default: throw ValidationError("--type \(type.rawValue) takes --merchant-id (merchant.com.example.shop), not --order-type-id")
            }
        }

        func run() throws {
            let (keyPath, _) = try Self.write(type, merchantId: merchantId ?? orderTypeId ?? "", folder: out, force: force)
            say("next: run\n  orchard certs import --cer <downloaded>.cer --key \(keyPath) --out \(type.rawValue).pem")
        }

        /// Writes `<type>.key` (0600) and `<type>.csr` into `folder` and says what to upload
        /// where: `certs csr` and `certs rotate csr` alike. With `ownership` (a rotation's), the
        /// folder and both files get the configuration's owner and group, and the key
        /// ``ConfigurationOwnership/keyMode``.
        static func write(
            _ type: Kind, merchantId: String, folder out: String, force: Bool, ownership: ConfigurationOwnership? = nil
        ) throws -> (key: String, csr: String) {
            let kind: MerchantCertificateKind =
                switch type {
                case .identity: .identity
                case .processing: .processing
                case .orderType: .orderType
                }
            let made: (keyPEM: String, csrPEM: String)
            do {
                made = try CertificateRequests.make(kind: kind, merchantIdentifier: merchantId)
            } catch {
                throw CommandFailure(error.message)
            }
            let folder = URL(fileURLWithPath: out)
            try? FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            let keyPath = folder.appendingPathComponent("\(type.rawValue).key").path
            let csrPath = folder.appendingPathComponent("\(type.rawValue).csr").path
            for path in [keyPath, csrPath] where FileManager.default.fileExists(atPath: path) && !force {
                throw CommandFailure("\(path) exists; pass --force to replace it (an old key may still be in use)")
            }
            try writeSecret(made.keyPEM, to: keyPath)
            do {
                try Data(made.csrPEM.utf8).write(to: URL(fileURLWithPath: csrPath))
            } catch {
                throw CommandFailure("cannot write \(csrPath): \(error.localizedDescription)")
            }
            if let ownership {
                try ownership.apply(toPath: folder.path)
                try ownership.apply(toPath: keyPath, mode: ownership.keyMode)
                try ownership.apply(toPath: csrPath)
            }
            let portal =
                switch type {
                case .identity: "Merchant IDs → \(merchantId) → Apple Pay Merchant Identity Certificate → Create Certificate"
                case .processing: "Merchant IDs → \(merchantId) → Apple Pay Payment Processing Certificate → Create Certificate"
                case .orderType: "Certificates → + → Order Type ID Certificate → \(merchantId)"
                }
            let mode = String(ownership?.keyMode ?? 0o600, radix: 8)
            say(
                """
                wrote \(keyPath) (mode 0\(mode): keep it secret) and \(csrPath)
                in the Apple Developer portal, \(portal), upload \(csrPath) and download the .cer
                """)
            return (keyPath, csrPath)
        }
    }

    struct Import: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Convert Apple's .cer (DER) to PEM, refusing a key that does not match it.")

        @Option(help: "The certificate downloaded from Apple.") var cer: String
        @Option(help: "The private key whose CSR was uploaded (PEM or DER, encrypted or not).") var key: String
        @Option(help: "An environment variable holding the key's password, when it is encrypted.") var passwordEnv: String?
        @Option(help: "Where to write the PEM certificate.") var out: String
        @Flag(help: "Replace an existing output file.") var force = false
        @Option(help: "Check validity at this ISO-8601 time instead of now.") var at: String?

        func run() throws {
            if FileManager.default.fileExists(atPath: out) && !force { throw CommandFailure("\(out) exists; pass --force to replace it") }
            var password: String?
            if let passwordEnv {
                guard let value = ProcessInfo.processInfo.environment[passwordEnv] else {
                    throw CommandFailure("\(passwordEnv) is not set")
                }
                password = value
            }
            let imported = try Self.read(cer: cer, key: key, password: password, at: try at.map(parseDate) ?? Date())
            try Self.write(imported.pem, to: out)
            let report = imported.report
            say(
                "wrote \(out): \(report.kind.rawValue) certificate, \(TerminalText.escaped(report.merchantIdentifier ?? "merchant ID unknown")), "
                    + "\(report.daysLeft) days left")
        }

        /// Apple's certificate as PEM, after `check` has seen it (what it must be, for `certs
        /// rotate import`), the key has been found to match it and it is valid at `now`: `certs
        /// import` and `certs rotate import` alike.
        static func read(
            cer: String, key: String, password: String?, at now: Date, check: (Certificate) throws -> Void = { _ in }
        ) throws -> (pem: String, certificate: Certificate, report: CertificateReport) {
            guard let cerBytes = FileManager.default.contents(atPath: cer) else { throw CommandFailure("cannot read \(cer)") }
            guard let keyBytes = FileManager.default.contents(atPath: key) else { throw CommandFailure("cannot read \(key)") }
            do {
                try check(try CertificateRequests.readCertificate(Array(cerBytes)))
            } catch let error as CertificateToolError {
                throw CommandFailure("\(cer): \(error.message)")
            }
            let keyText: String
            do {
                keyText = try KeyReader.privateKey(Array(keyBytes), password: password).pem
            } catch {
                throw CommandFailure("\(key): \(error.message)")
            }
            let imported: (pem: String, certificate: Certificate)
            do {
                imported = try CertificateRequests.importCertificate(Array(cerBytes), keyPEM: keyText)
            } catch {
                throw CommandFailure(error.message)
            }
            let report = CertificateInspector.report(imported.certificate, at: now)
            if report.expired { throw CommandFailure("the certificate expired on \(report.notValidAfter.formatted(.iso8601))") }
            return (imported.pem, imported.certificate, report)
        }

        static func write(_ pem: String, to out: String) throws {
            do {
                try Data(pem.utf8).write(to: URL(fileURLWithPath: out))
            } catch {
                throw CommandFailure("cannot write \(out): \(error.localizedDescription)")
            }
        }
    }

    struct Inspect: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Show what a PEM, DER or PKCS#12 (.p12, legacy Keychain exports too) file holds.")

        @Argument(help: "The file.") var file: String
        @Option(help: "The PKCS#12 password (prefer --password-env: arguments show in ps).") var password: String?
        @Option(help: "An environment variable holding the PKCS#12 password.") var passwordEnv: String?
        @Flag(help: "JSON output.") var json = false
        @Option(help: "Count days left from this ISO-8601 time instead of now.") var at: String?

        func run() throws {
            guard let bytes = FileManager.default.contents(atPath: file) else { throw CommandFailure("cannot read \(file)") }
            var secret = password
            if let passwordEnv {
                guard let value = ProcessInfo.processInfo.environment[passwordEnv] else {
                    throw CommandFailure("\(passwordEnv) is not set")
                }
                secret = value
            }
            let now = try at.map(parseDate) ?? Date()
            let report: CertificateFileReport
            do {
                report = try CertificateInspector.inspect(Array(bytes), password: secret, at: now)
            } catch {
                throw CommandFailure("\(file): \(error.message)")
            }
            if json {
                let encoder = JSONEncoder()
                encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
                encoder.dateEncodingStrategy = .iso8601
                say(TerminalText.escapedJSON(String(decoding: try encoder.encode(report), as: UTF8.self)))
                return
            }
            // A certificate's names are whoever made it's words: every line escaped.
            let say = { (text: String) in OrchardRuntime.say(TerminalText.escapedLines(text)) }
            say("\(file): \(report.format.uppercased())")
            for (index, certificate) in report.certificates.enumerated() {
                say(
                    """
                    certificate \(index + 1)\(index == 0 ? " (leaf)" : "")
                      subject      \(certificate.subject)
                      issuer       \(certificate.issuer)
                      kind         \(certificate.kind.rawValue)
                      merchant ID  \(certificate.merchantIdentifier ?? "-")\(certificate.merchantIdentifierMatches == false ? "  (does NOT match the extension)" : "")
                      6.32 hash    \(certificate.merchantIdentifierHash ?? "-")\(certificate.publicKeyHash.map { "\n  key hash     \($0)  (tokens encrypted to it name this publicKeyHash)" } ?? "")
                      key          \(certificate.keyType)\(certificate.keyBits.map { " (\($0) bits)" } ?? "")
                      valid        \(certificate.notValidBefore.formatted(.iso8601)) → \(certificate.notValidAfter.formatted(.iso8601))
                      days left    \(certificate.daysLeft)\(certificate.expired ? " (EXPIRED)" : "")
                      SHA-256      \(certificate.sha256Fingerprint)
                    """)
            }
            if let key = report.privateKey {
                let match = key.matchesCertificate.map { $0 ? ", matches certificate 1" : ", does NOT match certificate 1" } ?? ""
                say("private key    \(key.type)\(match)")
            }
            if report.privateKey == nil, report.certificates.first?.kind == .processing {
                say(
                    "note: no private key in this file. Listed alone under processingKeys, it is a key the processor holds: the processor decrypts, Orchard never does"
                )
            }
            for note in report.notes { say("note: \(note)") }
        }
    }
}

/// Parses `--at`.
func parseDate(_ text: String) throws -> Date {
    guard let date = try? Date(text, strategy: .iso8601) else {
        throw ValidationError("--at \(text) is not an ISO 8601 time like 2021-09-01T19:04:00Z")
    }
    return date
}

/// Creates `path` with mode 0600 before writing, so the secret is never readable by others.
func writeSecret(_ text: String, to path: String) throws {
    unlink(path)
    // O_EXCL and O_NOFOLLOW: whatever is put at `path` after the unlink is refused, not followed.
    let descriptor = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
    guard descriptor >= 0 else { throw CommandFailure("cannot create \(path): \(String(cString: strerror(errno)))") }
    defer { close(descriptor) }
    let bytes = Array(text.utf8)
    guard write(descriptor, bytes, bytes.count) == bytes.count else { throw CommandFailure("cannot write \(path)") }
}
