import Foundation

/// `openssl speed`'s time per operation, in µs, for each primitive a token needs.
struct OpenSSLSpeed {
    var ecdsaVerify: Double
    var ecdh: Double
    var rsaVerify: Double
    /// One RSA-2048 private-key operation: `decr./s` where openssl reports it (3.2 and later),
    /// else `sign/s` (the same private-key exponentiation, with a different padding).
    var rsaPrivate: Double
    var rsaPrivateColumn: String
    /// One SHA-256 block, from hashing 1024 bytes (17 blocks with the padding).
    var sha256Block: Double
    /// One AES-GCM open (IV, AAD, data, tag) at the vectors' data sizes; the key is set once.
    var aes256GCM: Double
    var aes128GCM: Double

    /// Runs openssl speed (public-key primitives for `seconds` each, symmetric ones for 1 s);
    /// nil when openssl is missing or its output is not understood.
    static func measure(seconds: Int, ecData: Int, rsaData: Int) -> OpenSSLSpeed? {
        let publicKey = run(["-seconds", String(seconds), "rsa2048", "ecdsap256", "ecdhp256"])
        guard let rsa = rates(publicKey, row: "rsa 2048 bits"), let ecdsa = rates(publicKey, row: "ecdsa (nistp256)"),
            let ecdh = rates(publicKey, row: "ecdh (nistp256)"), let rsaVerify = rsa["verify/s"], let ecdsaVerify = ecdsa["verify/s"],
            let ecdhRate = ecdh["op/s"], let privateOp = rsa["decr./s"].map({ ("decr./s", $0) }) ?? rsa["sign/s"].map({ ("sign/s", $0) }),
            let sha256 = bytesPerSecond(run(["-mr", "-seconds", "1", "-bytes", "1024", "-evp", "sha256"])),
            let aes256 = bytesPerSecond(
                run(["-mr", "-seconds", "1", "-aead", "-decrypt", "-bytes", String(ecData), "-evp", "aes-256-gcm"])),
            let aes128 = bytesPerSecond(
                run(["-mr", "-seconds", "1", "-aead", "-decrypt", "-bytes", String(rsaData), "-evp", "aes-128-gcm"]))
        else { return nil }
        return OpenSSLSpeed(
            ecdsaVerify: 1e6 / ecdsaVerify, ecdh: 1e6 / ecdhRate, rsaVerify: 1e6 / rsaVerify, rsaPrivate: 1e6 / privateOp.1,
            rsaPrivateColumn: "openssl's \(privateOp.0)", sha256Block: 1e6 * 1024 / sha256 / Double(sha256Blocks(1024)),
            aes256GCM: 1e6 * Double(ecData) / aes256, aes128GCM: 1e6 * Double(rsaData) / aes128)
    }

    static func run(_ arguments: [String]) -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["openssl", "speed"] + arguments
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = FileHandle.nullDevice
        guard (try? process.run()) != nil else { return "" }
        let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        return output
    }

    /// The rates of one row of a public-key table, by the names of its header's `…/s` columns
    /// (`sign/s verify/s`; `encr./s decr./s` too since openssl 3.2; `op/s`), which are the row's
    /// last numbers: columns are read by name, never by position.
    static func rates(_ output: String, row name: String) -> [String: Double]? {
        var header: [String] = []
        for line in output.split(separator: "\n") {
            let words = line.split(separator: " ")
            if words.contains(where: { $0.hasSuffix("/s") }) && !words.contains(where: { Double($0) != nil }) {
                header = words.filter { $0.hasSuffix("/s") }.map(String.init)
            } else if line.split(separator: " ").joined(separator: " ").contains(name), !header.isEmpty {
                let numbers = words.compactMap { Double($0) }
                guard numbers.count >= header.count else { return nil }
                return Dictionary(uniqueKeysWithValues: zip(header, numbers.suffix(header.count)))
            }
        }
        return nil
    }

    /// Bytes/s from `-mr` output (`+F:index:name:bytes per second`, one size).
    static func bytesPerSecond(_ output: String) -> Double? {
        output.split(separator: "\n").first { $0.hasPrefix("+F:") }.flatMap { $0.split(separator: ":").last }.flatMap { Double($0) }
            .flatMap { $0 > 0 ? $0 : nil }
    }
}
