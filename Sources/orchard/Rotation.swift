import ApplePay
import CertificateTools
import Crypto
import Foundation
import OrchardConfiguration
import OrchardCore
import OrchardRuntime
import OrchardServer
import OrchardServices
import SwiftASN1
import X509

/// The steps of `orchard certs rotate`, over the configuration file and the rotation's state.
struct Rotation {
    let options: Certs.Rotate.Options
    let file: ConfigurationFile
    let merchant: ConfigurationFile.Merchant
    /// The configuration's folder: relative paths in the file (and the rotation's) start there.
    let folder: String
    /// The configuration's owner, group and mode, which the files written for the service take on.
    let ownership: ConfigurationOwnership

    init(_ options: Certs.Rotate.Options) throws {
        self.options = options
        // First: a linked configuration is refused before anything is read or written beside it.
        ownership = try ConfigurationOwnership.of(options.config)
        do {
            file = try ConfigurationFile.load(path: options.config)
        } catch {
            throw CommandFailure(error.message)
        }
        guard let merchant = file.merchants.first(where: { $0.merchantIdentifier == options.merchant }) else {
            throw CommandFailure("\(options.config) has no merchant \(options.merchant) in merchants[]")
        }
        self.merchant = merchant
        folder = URL(fileURLWithPath: options.config).standardizedFileURL.deletingLastPathComponent().path
    }

    var type: String { options.type.rawValue }
    var isProcessing: Bool { options.type == .processing }
    var statePath: String { path("rotation/\(options.merchant).\(type).json") }

    /// A path relative to the configuration's folder, made absolute.
    func path(_ relative: String) -> String { URL(fileURLWithPath: folder).appendingPathComponent(relative).path }

    func state() throws -> RotationState? {
        guard let data = FileManager.default.contents(atPath: statePath) else { return nil }
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        guard let state = try? decoder.decode(RotationState.self, from: data) else {
            throw CommandFailure("\(statePath) is not a rotation's state; remove it to start over")
        }
        return state
    }

    func save(_ state: RotationState) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .iso8601
        do {
            try encoder.encode(state).write(to: URL(fileURLWithPath: statePath), options: .atomic)
        } catch {
            throw CommandFailure("cannot write \(statePath): \(error.localizedDescription)")
        }
    }

    /// The state, which must be at one of `steps`; otherwise a refusal naming the step to run.
    func require(_ steps: Set<RotationState.Step>, for step: String) throws -> RotationState {
        guard let state = try state() else {
            throw CommandFailure("no \(type) rotation under way for \(options.merchant): start with \(start)")
        }
        guard steps.contains(state.step) else {
            throw CommandFailure("\(step) cannot run now (the rotation is at \(state.step.rawValue)): next is \(next(after: state.step))")
        }
        return state
    }

    /// What starts a rotation: the CSR, or Apple's new certificate where the processor holds the key (and made the CSR).
    var start: String {
        processorHoldsKeys ? options.command("import", " --cer <downloaded>.cer") : options.command("csr")
    }

    /// What to run after `step`.
    func next(after step: RotationState.Step) -> String {
        switch step {
        case .csr: options.command("import", " --cer <downloaded>.cer")
        case .imported: options.command("prove")
        case .proven: options.command("retire")
        }
    }

    // MARK: step 1

    func csr() throws {
        if let state = try state() {
            throw CommandFailure(
                "a \(type) rotation of \(options.merchant) is under way (at \(state.step.rawValue), files in \(path(state.folder))): next is \(next(after: state.step)); to start over, remove \(statePath) (and, once imported, the new key's entry)"
            )
        }
        if processorHoldsKeys {
            throw CommandFailure(
                "the processor holds \(options.merchant)'s processing key (processingKeys lists certificates alone): get the new CSR from the processor, make the certificate with it in the Apple Developer portal, then run \(options.command("import", " --cer <downloaded>.cer"))"
            )
        }
        if isProcessing && (merchant.processingKeys ?? []).isEmpty {
            throw CommandFailure("\(options.merchant) has no processingKeys to rotate: list its first key with `orchard certs csr`")
        }
        let stamp = Date().formatted(.iso8601.year().month().day().time(includingFractionalSeconds: false)).filter(\.isNumber)
        let relative = "rotation/\(options.merchant).\(type).\(stamp)"
        _ = try Certs.CSR.write(options.type, merchantId: options.merchant, folder: path(relative), force: false, ownership: ownership)
        try ownership.apply(toPath: path("rotation"))
        try save(RotationState(step: .csr, folder: relative))
        say("next: \(next(after: .csr))")
    }

    /// "an identity", "a processing"…: what a certificate is, for messages.
    static func article(_ kind: MerchantCertificateKind) -> String {
        switch kind {
        case .identity: "an identity"
        case .processing: "a processing"
        case .orderType: "an Order Type ID"
        case .other: "neither a processing nor an identity"
        }
    }

    // MARK: step 2

    func importCertificate(_ cer: String, at now: Date) throws {
        if processorHoldsKeys, try state() == nil { return try importProcessorHeld(cer, at: now) }
        var state = try require([.csr], for: "import")
        let expected: MerchantCertificateKind = isProcessing ? .processing : .identity
        let merchantHash = MerchantIdentifierExtension.hash(of: options.merchant)
        let imported = try Certs.Import.read(cer: cer, key: path("\(state.folder)/\(type).key"), password: nil, at: now) { certificate in
            let kind = CertificateInspector.kind(of: certificate)
            guard kind == expected else {
                throw CommandFailure(
                    "\(cer): this is \(Self.article(kind)) certificate (by its key usage), not the \(type) certificate this rotation needs"
                )
            }
            guard MerchantIdentifierExtension.value(in: certificate)?.uppercased() == merchantHash else {
                throw CommandFailure(
                    "\(cer): the certificate's merchant-ID extension (1.2.840.113635.100.6.32) is not \(options.merchant)'s: download the certificate made for this merchant ID"
                )
            }
        }
        let certificatePath = "\(state.folder)/\(type).pem"
        try ownership.replace(path(certificatePath), bytes: Array(imported.pem.utf8), mode: 0o644)
        state.publicKeyHash = try Self.publicKeyHash(imported.certificate)
        say("wrote \(path(certificatePath)): \(type) certificate for \(options.merchant), \(imported.report.daysLeft) days left")
        if isProcessing {
            // Tokens name the processing key by this hash; an identity certificate is no token's.
            say("its key's publicKeyHash is \(state.publicKeyHash ?? "")")
            state.oldKeys = merchant.processingKeys?.filter { $0.privateKey != "\(state.folder)/processing.key" }
            try listNewKey(state.folder, certificate: certificatePath)
            say(
                "next: restart every instance (one at a time) so that each decrypts tokens for both keys, then \(next(after: .imported)); activate the new certificate in the Apple Developer portal only after that"
            )
        } else {
            say("the configuration still uses the current identity: Apple accepts both certificates until you revoke the old one")
            say("next: \(next(after: .imported)) (asks the configured gateway for a merchant session with the new identity)")
        }
        state.step = .imported
        try save(state)
    }

    /// Lists the new processing key after the merchant's others, unless it is listed already (an
    /// import stopped after writing the configuration and before saving its state).
    func listNewKey(_ folder: String, certificate: String) throws {
        let keyFile = "\(folder)/processing.key"
        guard merchant.processingKeys?.contains(where: { $0.privateKey == keyFile }) != true else {
            say("\(options.config) already lists the new key")
            return
        }
        let entry = "{\"privateKey\": \(ConfigurationEditor.quoted(keyFile)), \"certificate\": \(ConfigurationEditor.quoted(certificate))}"
        try appendProcessingKey(entry)
    }

    /// Appends `entry` (JSON) to the merchant's processingKeys, leaving the rest of the file as written.
    func appendProcessingKey(_ entry: String) throws {
        let backup = try edit("import") { editor, members throws(CommandFailure) in
            guard let list = members.first(where: { $0.key == "processingKeys" }) else {
                throw CommandFailure("\(options.merchant) has no processingKeys list")
            }
            try editing { () throws(ConfigurationEditor.Malformed) in try editor.append(entry, toArrayAt: list.value.lowerBound) }
        }
        say(
            "added the new key as processingKeys[\(merchant.processingKeys?.count ?? 0)] beside the old one in \(options.config) (previous file: \(backup))"
        )
    }

    /// Base64 SHA-256 of a certificate's public key (SubjectPublicKeyInfo): what a token names in `publicKeyHash`.
    static func publicKeyHash(_ certificate: Certificate) throws -> String {
        guard let hash = ProcessingKey.publicKeyHash(of: certificate) else { throw CommandFailure("the certificate's key cannot be read") }
        return Data(hash).base64EncodedString()
    }

    /// Edits this merchant's object in the configuration file, checks the result is a
    /// configuration still, and writes it atomically; returns the backup's path.
    func edit(_ step: String, _ change: (inout ConfigurationEditor, [ConfigurationEditor.Member]) throws(CommandFailure) -> Void) throws
        -> String
    {
        guard let original = ConfigurationOwnership.contents(options.config) else {
            throw CommandFailure("cannot read \(options.config)")
        }
        var editor = ConfigurationEditor(bytes: Array(original))
        let (_, members) = try editor.merchant(options.merchant)
        try change(&editor, members)
        guard (try? JSONDecoder().decode(ConfigurationFile.self, from: Data(editor.bytes))) != nil else {
            throw CommandFailure("the edited configuration would not load; \(options.config) is unchanged")
        }
        let backup = options.config + ".before-\(type)-\(step)"
        try editor.write(to: options.config, backup: backup, original: Array(original))
        return backup
    }

    func editing(_ body: () throws(ConfigurationEditor.Malformed) -> Void) throws(CommandFailure) {
        do {
            try body()
        } catch {
            throw CommandFailure("the configuration is not JSON this editor can read; \(options.config) is unchanged")
        }
    }
}
