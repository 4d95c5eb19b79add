import Foundation

/// One private key written in every form people have, by the system `openssl` CLI (tests only).
public struct KeyForm: Sendable, CustomStringConvertible {
    /// What the form is, e.g. `pkcs8-encrypted`.
    public var name: String
    /// The file holding it.
    public var path: String
    /// True when the file needs the password.
    public var encrypted: Bool
    /// True when the file also holds the certificate (PKCS#12).
    public var bundlesCertificate: Bool

    public var description: String { name }
}

public enum KeyForms {
    /// The password every encrypted form uses.
    public static let password = "orchard-test-pw"

    /// Writes `keyPEM` (with `certificatePEM` for the PKCS#12 forms) into `directory` in each
    /// form: PEM with an `EC PARAMETERS` block (EC keys, as `openssl ecparam -genkey` writes),
    /// PKCS#8, encrypted PKCS#8, traditional encrypted PEM, DER (traditional and PKCS#8,
    /// plain and encrypted), and modern and legacy PKCS#12. `password.txt` holds the password.
    /// The `openssl` runs happen on a thread of their own, off the cooperative pool.
    public static func write(keyPEM: String, certificatePEM: String, isEC: Bool, into directory: String) async throws -> [KeyForm] {
        try await offPool { try writeBlocking(keyPEM: keyPEM, certificatePEM: certificatePEM, isEC: isEC, into: directory) }
    }

    private static func writeBlocking(keyPEM: String, certificatePEM: String, isEC: Bool, into directory: String) throws -> [KeyForm] {
        let key = directory + "/source.key"
        let certificate = directory + "/source.pem"
        try Data(keyPEM.utf8).write(to: URL(fileURLWithPath: key))
        try Data(certificatePEM.utf8).write(to: URL(fileURLWithPath: certificate))
        try Data((password + "\n").utf8).write(to: URL(fileURLWithPath: directory + "/password.txt"))
        let tool = isEC ? "ec" : "rsa"
        let pass = "pass:\(password)"
        var forms: [KeyForm] = []
        func make(_ name: String, encrypted: Bool = false, p12: Bool = false, _ arguments: [String]) throws {
            let path = "\(directory)/\(name)"
            try opensslBlocking(arguments + ["-out", path])
            forms.append(KeyForm(name: name, path: path, encrypted: encrypted, bundlesCertificate: p12))
        }
        if isEC {
            let parameters = directory + "/parameters.pem"
            let sec1 = directory + "/sec1.pem"
            try opensslBlocking(["ecparam", "-name", "prime256v1", "-out", parameters])
            try opensslBlocking(["ec", "-in", key, "-out", sec1])
            let combined = try Data(contentsOf: URL(fileURLWithPath: parameters)) + Data(contentsOf: URL(fileURLWithPath: sec1))
            try combined.write(to: URL(fileURLWithPath: directory + "/ecparam-genkey.pem"))
            forms.append(
                KeyForm(name: "ecparam-genkey.pem", path: directory + "/ecparam-genkey.pem", encrypted: false, bundlesCertificate: false))
        } else {
            try make("pkcs1.pem", ["rsa", "-in", key, "-traditional"])
        }
        try make("pkcs8.pem", ["pkcs8", "-topk8", "-nocrypt", "-in", key])
        try make("pkcs8-encrypted.pem", encrypted: true, ["pkcs8", "-topk8", "-v2", "aes-256-cbc", "-passout", pass, "-in", key])
        try make(
            "traditional-encrypted.pem", encrypted: true, [tool, "-in", key, "-aes256", "-passout", pass] + (isEC ? [] : ["-traditional"]))
        try make("traditional.der", [tool, "-in", key, "-outform", "DER"] + (isEC ? [] : ["-traditional"]))
        try make("pkcs8.der", ["pkcs8", "-topk8", "-nocrypt", "-outform", "DER", "-in", key])
        try make(
            "pkcs8-encrypted.der", encrypted: true,
            ["pkcs8", "-topk8", "-v2", "aes-256-cbc", "-passout", pass, "-outform", "DER", "-in", key])
        try make("modern.p12", encrypted: true, p12: true, ["pkcs12", "-export", "-inkey", key, "-in", certificate, "-passout", pass])
        try make(
            "legacy.p12", encrypted: true, p12: true, ["pkcs12", "-export", "-legacy", "-inkey", key, "-in", certificate, "-passout", pass])
        return forms
    }

    /// Runs the system `openssl` (CI installs it); throws with its standard error on failure.
    public static func openssl(_ arguments: [String]) async throws {
        try await offPool { try opensslBlocking(arguments) }
    }

    private static func opensslBlocking(_ arguments: [String]) throws {
        let result = try OrchardProcess.runBlocking(arguments, executable: URL(fileURLWithPath: "/usr/bin/openssl"))
        guard result.status == 0 else { throw OpenSSLFailed(arguments: arguments, stderr: result.stderr) }
    }

    public struct OpenSSLFailed: Error, CustomStringConvertible {
        public var arguments: [String]
        public var stderr: String
        public var description: String { "openssl \(arguments.joined(separator: " ")) failed: \(stderr)" }
    }
}
