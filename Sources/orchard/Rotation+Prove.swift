import AppleGateway
import CurlClient
import Foundation
import OrchardConfiguration
import OrchardCore
import OrchardRuntime
import OrchardServer
import OrchardServices
import SwiftASN1
import X509

extension Rotation {
    // MARK: step 3

    func prove() async throws {
        var state = try require([.imported, .proven], for: "prove")
        guard let hash = state.publicKeyHash else { throw CommandFailure("\(statePath) names no new key: import again") }
        let environment = ProcessInfo.processInfo.environment
        let checks: [DoctorCheck]
        if isProcessing {
            let keys = merchant.processingKeys ?? []
            let held = processorHeldEntry(state.folder)
            let isNew = { (entry: ConfigurationFile.ProcessingKeyFile) in
                entry.privateKey == "\(state.folder)/processing.key" || Self.same(entry, held)
            }
            guard let number = keys.firstIndex(where: isNew).map({ $0 + 1 }) else {
                throw CommandFailure(
                    "\(options.config) does not list the new key (\(state.folder)/processing.key) under \(options.merchant)'s processingKeys: import put it there; add it back"
                )
            }
            let report = await Doctor(sessions: nil).check(file: file, folder: folder, environment: environment)
            let mine = report.checks.filter { $0.subject == options.merchant && $0.check.contains("processing key") }
            for check in mine { say(line(check)) }
            // A processor-held key decrypts at the processor only: its proof is the certificate's checks and hash.
            let processorHeld = keys[number - 1].privateKey == nil
            let wanted = ["processing key \(number)"] + (processorHeld ? [] : [Doctor.decryptCheckName(number: number)])
            checks = wanted.compactMap { name in mine.first { $0.check == name } }
            guard checks.count == wanted.count, checks.allSatisfy(\.passed), checks[0].detail.contains(hash) else {
                throw CommandFailure("the new key (processing key \(number)) is not proven: fix what the ✗ lines say and run prove again")
            }
        } else {
            let http = try CurlHTTPClient(configuration: .init(proxy: file.outbound?.proxy))
            defer { http.shutdownBeforeExit() }
            let sessions = try DoctorCommand.sessionService(file: file, folder: folder, environment: environment, http: http)
            checks = await Doctor(sessions: sessions).checkIdentity(
                certificate: "\(state.folder)/identity.pem", key: "\(state.folder)/identity.key", merchant: merchant, folder: folder,
                environment: environment)
            for check in checks { say(line(check)) }
            guard !merchant.domains.isEmpty else { throw CommandFailure("\(options.merchant) has no domain to ask a session for") }
            guard checks.allSatisfy(\.passed), checks.contains(where: { $0.check.hasPrefix("session ") }) else {
                throw CommandFailure("the new identity is not proven: fix what the ✗ lines say and run prove again")
            }
        }
        state.proof = RotationState.Proof(publicKeyHash: hash, at: Date(), checks: checks.map(line))
        state.step = .proven
        try save(state)
        if isProcessing && processorHoldsKeys {
            say(
                "proven: Orchard takes tokens naming publicKeyHash \(hash) for the processor to decrypt. next: once the processor has switched to the new key and every instance runs with both, \(next(after: .proven))"
            )
            return
        }
        say(
            isProcessing
                ? "proven: a token for the new key decrypts. next: activate the new certificate in the Apple Developer portal; once every instance runs with both keys and tokens name the new key, \(next(after: .proven))"
                : "proven: the new identity gets merchant sessions. next: \(next(after: .proven)) (switches the configuration to it)")
    }

    func line(_ check: DoctorCheck) -> String {
        // The detail may quote Apple's answer or a processor's.
        TerminalText.escaped("\(check.passed ? "✓" : "✗") \(check.subject) \(check.check): \(check.detail)")
    }

    // MARK: step 4

    func retire() throws {
        let state = try require([.csr, .imported, .proven], for: "retire")
        guard state.step == .proven, let proof = state.proof, proof.publicKeyHash == state.publicKeyHash else {
            let at = state.step.rawValue
            throw CommandFailure(
                "retire needs the new key's proof, and there is none (the rotation is at \(at)): run \(options.command("prove")) first; the old key stays"
            )
        }
        let certificate = path("\(state.folder)/\(type).pem")
        guard let pem = try? String(contentsOfFile: certificate, encoding: .utf8), let current = try? Certificate(pemEncoded: pem),
            (try? Self.publicKeyHash(current)) == proof.publicKeyHash
        else {
            throw CommandFailure(
                "\(certificate) is not the certificate that was proven: run \(options.command("prove")) again; the old key stays")
        }
        if isProcessing {
            try retireProcessingKeys(state.oldKeys ?? [])
        } else {
            let certificate = ConfigurationEditor.quoted("\(state.folder)/identity.pem")
            let key = ConfigurationEditor.quoted("\(state.folder)/identity.key")
            let backup = try edit("retire") { editor, members throws(CommandFailure) in
                try editing { () throws(ConfigurationEditor.Malformed) in try Self.switchIdentity(&editor, members, certificate, key) }
            }
            say("\(options.merchant) now uses the new identity in \(options.config) (previous file: \(backup))")
            say(
                "next: restart every instance (one at a time); Apple accepts both identities meanwhile. Revoke the old certificate in the Apple Developer portal only after the last restart"
            )
        }
        do {
            try FileManager.default.removeItem(atPath: statePath)
        } catch {
            throw CommandFailure("cannot remove \(statePath): \(error.localizedDescription)")
        }
        say("the rotation is done; the new key's files stay in \(path(state.folder)), where the configuration points")
    }

    /// Removes the entries listed before the new key from the merchant's processingKeys.
    func retireProcessingKeys(_ old: [ConfigurationFile.ProcessingKeyFile]) throws {
        var removed = 0
        let backup = try edit("retire") { editor, members throws(CommandFailure) in
            guard let list = members.first(where: { $0.key == "processingKeys" }) else {
                throw CommandFailure("\(options.merchant) has no processingKeys list")
            }
            try editing { () throws(ConfigurationEditor.Malformed) in
                // One at a time, reading the list again after each removal.
                while true {
                    let elements = try editor.elements(list.value.lowerBound).elements
                    guard
                        let retired = elements.first(where: { range in
                            let entry = try? JSONDecoder().decode(
                                ConfigurationFile.ProcessingKeyFile.self, from: Data(editor.bytes[range]))
                            return entry.map { entry in old.contains { Self.same($0, entry) } } ?? false
                        })
                    else { break }
                    editor.remove(retired, from: elements)
                    removed += 1
                }
            }
        }
        say(
            "removed \(removed) old processing key\(removed == 1 ? "" : "s") from \(options.merchant) in \(options.config) (previous file: \(backup))"
        )
        say(
            "next: restart every instance (one at a time); tokens for the old key are refused from then on. Keep the old key file until you are sure, then destroy it"
        )
    }

    static func same(_ a: ConfigurationFile.ProcessingKeyFile, _ b: ConfigurationFile.ProcessingKeyFile) -> Bool {
        a.privateKey == b.privateKey && a.certificate == b.certificate && a.pkcs12 == b.pkcs12 && a.password == b.password
    }

    /// Points the merchant's identity at the new files: the pair's values replaced (and a key
    /// password dropped: the new key is not encrypted), or a PKCS#12 `identity` replaced by the pair.
    static func switchIdentity(
        _ editor: inout ConfigurationEditor, _ members: [ConfigurationEditor.Member], _ certificate: String, _ key: String
    ) throws(ConfigurationEditor.Malformed) {
        let spans = members.map { $0.start..<$0.value.upperBound }
        var edits: [(Range<Int>, String?)] = []
        for member in members {
            switch member.key {
            case "identityCertificate": edits.append((member.value, certificate))
            case "identityKey": edits.append((member.value, key))
            case "identityKeyPassword": edits.append((member.start..<member.value.upperBound, nil))
            case "identity":
                let separator = String(decoding: editor.separator(before: member.start), as: UTF8.self)
                edits.append(
                    (member.start..<member.value.upperBound, "\"identityCertificate\": \(certificate),\(separator)\"identityKey\": \(key)"))
            default: break
            }
        }
        guard !edits.isEmpty else { throw ConfigurationEditor.Malformed() }
        // From the end of the file back, so each range still holds when it is edited.
        for (range, text) in edits.sorted(by: { $0.0.lowerBound > $1.0.lowerBound }) {
            if let text { editor.replace(range, with: text) } else { editor.remove(range, from: spans) }
        }
    }
}
