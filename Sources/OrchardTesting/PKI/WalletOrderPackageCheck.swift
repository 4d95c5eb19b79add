import Foundation
import SwiftASN1
import X509

/// Checks a Wallet order package with tools apart from Orchard's: Python's `zipfile` and
/// `hashlib` for the archive and the manifest, `openssl cms -verify` for the signature (against
/// `ca` alone: the intermediate must come from the signature), and Python's `jsonschema` for
/// `order.json` against Tests/WalletOrdersTests/Fixtures/order.schema.json (Apple's documented schema).
public enum WalletOrderPackageCheck {
    public struct Result: Sendable {
        public var status: Int32
        /// `order.json` as packaged.
        public var orderJSON: String
        /// The archive's entries, in its order.
        public var names: [String]
        /// Why it failed, when it did (Python's and openssl's messages).
        public var stderr: String
    }

    static let script = #"""
        import hashlib, json, re, subprocess, sys, zipfile
        package, ca, out, schema_path, loopback = sys.argv[1:6]
        with zipfile.ZipFile(package) as archive:
            bad = archive.testzip()
            assert bad is None, "bad CRC: " + str(bad)
            names = archive.namelist()
            files = {name: archive.read(name) for name in names}
        manifest = json.loads(files["manifest.json"])
        assert sorted(manifest) == sorted(n for n in names if n not in ("manifest.json", "signature")), (manifest, names)
        for name, digest in manifest.items():
            assert hashlib.sha256(files[name]).hexdigest() == digest, "manifest hash of " + name
        open(out + "/manifest.json", "wb").write(files["manifest.json"])
        open(out + "/signature", "wb").write(files["signature"])
        verify = subprocess.run(["openssl", "cms", "-verify", "-binary", "-inform", "DER", "-in", out + "/signature",
            "-content", out + "/manifest.json", "-CAfile", ca, "-purpose", "any", "-out", "/dev/null"], capture_output=True, text=True)
        sys.stderr.write(verify.stderr)
        assert verify.returncode == 0, "openssl cms -verify failed"
        printed = subprocess.run(["openssl", "cms", "-cmsout", "-print", "-inform", "DER", "-in", out + "/signature"],
            capture_output=True, text=True).stdout
        assert "signingTime" in printed, "no signing time"
        assert "eContent: <ABSENT>" in printed, "not detached"
        import jsonschema
        schema = json.load(open(schema_path))
        order = json.loads(files["order.json"])
        if loopback == "1" and re.match(r"^http://(127\.0\.0\.1|localhost|\[::1\])[:/]", order.get("webServiceURL", "")):
            schema["properties"]["webServiceURL"]["pattern"] = "^http://"
        jsonschema.validate(order, schema, format_checker=jsonschema.FormatChecker())
        print(files["order.json"].decode())
        print(" ".join(names))
        """#

    /// The package checked; `loopbackWebService` accepts a plain-http `webServiceURL` on loopback (tests and the demo).
    public static func check(_ package: [UInt8], ca: Certificate, loopbackWebService: Bool = false) async throws -> Result {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("order-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let packagePath = folder.appendingPathComponent("package.order")
        let caPath = folder.appendingPathComponent("ca.pem")
        try Data(package).write(to: packagePath)
        try Data((try ca.serializeAsPEM().pemString + "\n").utf8).write(to: caPath)
        let schema = OrchardProcess.repositoryRoot.appendingPathComponent("Tests/WalletOrdersTests/Fixtures/order.schema.json")
        let result = try await OrchardProcess.tool(
            "python3", ["-c", script, packagePath.path, caPath.path, folder.path, schema.path, loopbackWebService ? "1" : "0"])
        let lines = String(decoding: result.stdout, as: UTF8.self).split(separator: "\n").map(String.init)
        return Result(
            status: result.status, orderJSON: lines.first ?? "", names: (lines.last ?? "").split(separator: " ").map(String.init),
            stderr: result.stderr)
    }
}
