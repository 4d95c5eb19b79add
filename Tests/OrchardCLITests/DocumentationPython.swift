import Foundation
import OrchardTesting

/// Runs a page's `python` block on real webhook deliveries: it defines `orchard_event(secret, body,
/// headers)` (Standard Webhooks) or `verify_webhook(secret, signature_header, body)` (the deprecated
/// `Orchard-Signature`), and each must accept every delivery with each secret that signed it and
/// refuse it with one byte of the body changed.
enum DocumentationPython {
    /// One delivery as received, and the secrets that signed it (`current` signs `Orchard-Signature`).
    struct Case: Encodable {
        var type: String
        var body: String
        var headers: [String: String]
        var orchardSignature: String
        var current: String
        var secrets: [String]
    }

    static func cases(_ deliveries: [MockWebhookReceiver.Delivery], current: String, previous: String?) -> [Case] {
        deliveries.map {
            Case(
                type: $0.type, body: Data($0.body).base64EncodedString(), headers: $0.standard, orchardSignature: $0.signature,
                current: current, secrets: [current] + (previous.map { [$0] } ?? []))
        }
    }

    /// The driver: loads the block as a module, then checks each case with what it defines. A
    /// secret without the `whsec_` prefix goes to `orchard_event` as its bytes, as the block's
    /// comment says.
    static let driver = #"""
        import base64, json, sys
        source, cases = open(sys.argv[1]).read(), json.load(open(sys.argv[2]))
        block = {}
        exec(compile(source, sys.argv[1], "exec"), block)
        checks, failures = 0, []
        for case in cases:
            body = base64.b64decode(case["body"])
            tampered = body[:-1] + bytes([body[-1] ^ 1])
            if "orchard_event" in block:
                for secret in case["secrets"]:
                    kind = "whsec_" if secret.startswith("whsec_") else "older"
                    given = secret if kind == "whsec_" else secret.encode()
                    checks += 1
                    if block["orchard_event"](given, body, case["headers"]) is None:
                        failures.append(f"orchard_event refused a genuine {case['type']} with the {kind} secret")
                    if block["orchard_event"](given, tampered, case["headers"]) is not None:
                        failures.append(f"orchard_event accepted a tampered {case['type']} with the {kind} secret")
            if "verify_webhook" in block:
                secret = case["current"]
                kind = "whsec_" if secret.startswith("whsec_") else "older"
                checks += 1
                if not block["verify_webhook"](secret, case["orchardSignature"], body):
                    failures.append(f"verify_webhook refused a genuine {case['type']} with the {kind} secret")
                if block["verify_webhook"](secret, case["orchardSignature"], tampered):
                    failures.append(f"verify_webhook accepted a tampered {case['type']} with the {kind} secret")
        if checks == 0:
            failures.append("the block defines neither orchard_event nor verify_webhook")
        print(json.dumps({"checks": checks, "failures": failures}))
        sys.exit(1 if failures else 0)
        """#

    /// Runs `block` on `cases`; throws with the block's place and what failed.
    static func run(_ block: DocumentationBlocks.Block, cases: [Case]) async throws -> Int {
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        try folder.write("block.py", Array(block.text.utf8))
        try folder.write("driver.py", Array(driver.utf8))
        try folder.write("cases.json", Array(try JSONEncoder().encode(cases)))
        let result = try await OrchardProcess.tool(
            "python3", [folder.path("driver.py"), folder.path("block.py"), folder.path("cases.json")])
        let output = String(decoding: result.stdout, as: UTF8.self)
        guard result.status == 0, let json = DocumentationShell.object(output), let checks = json["checks"] as? Int else {
            throw DocumentationBlockFailure(
                "\(block) failed (\(result.exit)):\n\(block.text)--- stdout:\n\(output)\n--- stderr:\n\(result.stderr)")
        }
        return checks
    }
}
