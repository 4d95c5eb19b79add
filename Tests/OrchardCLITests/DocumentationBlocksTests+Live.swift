import CurlClient
import Foundation
import OrchardConfiguration
import OrchardIntegrationTesting
import OrchardServerTesting
import OrchardTesting
import Testing

extension DocumentationBlocksTests {
    @Test("the shell, python, event and log blocks run against a live demo and a server whose processor failed to answer")
    func liveBlocks() async throws {
        let demo = try await DocumentationDemo()
        do {
            do { try await runDemoBlocks(demo) } catch { Issue.record("\(error)") }
            // Every payment the blocks (and the test) authorized, and the mandate, reported.
            let payments = Set(try await demo.paymentIDs())
            #expect(payments.count >= 3, "the blocks' payments and the test's: \(payments)")
            let demoDeliveries = try await demo.receiver.wait { seen in
                let authorized = seen.filter { $0.type == "payment.authorized" }.compactMap {
                    (($0.json?["data"] as? [String: Any])?["payment"] as? [String: Any])?["id"] as? String
                }
                return payments.isSubset(of: authorized) && seen.contains { $0.type == "mandate.created" }
                    && seen.contains { $0.type == "mandate.updated" }
            }
            try compareEvents(demoDeliveries)
            try compareLogLine(demo.log)
            let older = try await unknownPaymentBlocks()
            let cases =
                DocumentationPython.cases(
                    demoDeliveries, current: try demo.secret("webhook-secret"), previous: try demo.secret("webhook-previous-secret"))
                + DocumentationPython.cases(older.deliveries, current: older.secret, previous: nil)
            #expect(cases.contains { $0.current.hasPrefix("whsec_") } && cases.contains { !$0.current.hasPrefix("whsec_") })
            let python = try Self.blocks(.python)
            #expect(python.count >= 2, "the pages' webhook checks were found")
            for block in python {
                do {
                    let checks = try await DocumentationPython.run(block, cases: cases)
                    #expect(checks >= cases.count)
                } catch { Issue.record("\(error)") }
            }
        } catch {
            Issue.record("\(error)")
        }
        await demo.stop()
    }

    /// The demo's blocks, page by page in order; the placeholders each needs made first.
    func runDemoBlocks(_ demo: DocumentationDemo) async throws {
        let folder = demo.directory.url.appendingPathComponent("blocks")
        // Config/ is the demo's folder: Config/orchard.json its configuration, the files it names beside it.
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(
            atPath: folder.appendingPathComponent("Config").path, withDestinationPath: demo.stateDirectory)
        // .orchard/demo is the demo's folder too, where `orchard-sandbox demo` run in that folder keeps it.
        try FileManager.default.createDirectory(at: folder.appendingPathComponent(".orchard"), withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(
            atPath: folder.appendingPathComponent(".orchard/demo").path, withDestinationPath: demo.stateDirectory)
        var shell = DocumentationShell(directory: folder, server: demo.server, merchant: DemoEnvironment.merchantIdentifier)
        shell.variables["ORCHARD_ADMIN_TOKEN"] = try demo.secret("admin-token")
        let blocks = try Self.blocks(.demo)
        #expect(blocks.count >= 6, "the pages' curl and keys blocks were found (\(blocks.count))")
        // The key first: every other call needs it.
        let keys = try #require(blocks.first { $0.text.contains("orchard keys create") }, "a page creates the API key")
        let created = try await shell.run(keys)
        let key = try #require(created.firstMatch(of: /osk_[A-Za-z0-9_\-]+/).map { String($0.0) }, "\(keys) printed a key: \(created)")
        shell.variables["ORCHARD_API_KEY"] = key
        var lastRequest: [String: Any]?
        for block in blocks where block.line != keys.line || block.file != keys.file {
            do {
                try await prepare(block, demo: demo, shell: &shell, lastRequest: lastRequest)
                let output = try await shell.run(block)
                if let object = DocumentationShell.object(output), object["clientSecret"] != nil { lastRequest = object }
            } catch { Issue.record("\(error)") }
        }
        try await checkoutFields(demo)
    }

    /// Gives the placeholders `block` uses their state: `$PAYMENT` an authorized payment,
    /// `$MANDATE` the mandate set up by paying the recurring request a block before made, `$ID`
    /// the payment request a block before made (and `token.json` a test token for it).
    func prepare(
        _ block: DocumentationBlocks.Block, demo: DocumentationDemo, shell: inout DocumentationShell, lastRequest: [String: Any]?
    ) async throws {
        let key = shell.variables["ORCHARD_API_KEY"] ?? ""
        if block.text.contains("$PAYMENT") && shell.variables["PAYMENT"] == nil {
            let request = try await demo.api(
                "POST", "/v1/payment-requests", key: key, body: #"{"amount": 1234, "currency": "EUR", "reference": "order-1000"}"#)
            shell.variables["PAYMENT"] = try await demo.pay(request, key: key)["id"] as? String
        }
        guard block.text.contains("$MANDATE") || block.text.contains("$ID") else { return }
        guard let request = lastRequest else { throw DocumentationBlockFailure("\(block): no block before it creates its payment request") }
        if block.text.contains("$MANDATE") {
            let payment = try await demo.pay(request, key: key, merchantToken: "DNITHE000000000000000001")
            let detail = try await demo.api("GET", "/v1/payments/\(payment["id"] as? String ?? "")", key: key)
            guard let mandate = (detail["payment"] as? [String: Any])?["mandateId"] as? String else {
                throw DocumentationBlockFailure("\(block): the recurring payment set up no mandate: \(detail)")
            }
            shell.variables["MANDATE"] = mandate
            // Apple's card update for its merchant token, through the demo's mock gateway: the mandate.updated a page shows.
            try await demo.sendCardUpdate(merchantToken: "DNITHE000000000000000001")
        }
        if block.text.contains("$ID") {
            shell.variables["ID"] = request["id"] as? String
            try Data(try demo.tokenBody(for: request)).write(to: shell.directory.appendingPathComponent("token.json"))
        }
    }

    /// `GET /api/checkout`'s fields, each named in docs/http-api.md's Checkout line.
    func checkoutFields(_ demo: DocumentationDemo) async throws {
        let page = try String(contentsOf: OrchardProcess.repositoryRoot.appendingPathComponent("docs/http-api.md"), encoding: .utf8)
        let line = try #require(page.components(separatedBy: "\n- **").first { $0.hasPrefix("Checkout**") })
        let answer = try await demo.client.execute(
            CurlRequest(method: "GET", url: demo.server + "/api/checkout", headers: [(name: "Host", value: "localhost")]))
        let fields = try #require(answer.json, "GET /api/checkout answered \(answer.status)").keys
        #expect(fields.count > 5)
        for field in fields where !line.contains("`\(field)`") { Issue.record("docs/http-api.md's Checkout line leaves out `\(field)`") }
    }

    /// Every key an event block shows (`"…"` any value) is in a real delivery of its type.
    func compareEvents(_ deliveries: [MockWebhookReceiver.Delivery]) throws {
        for block in try Self.blocks(.event) {
            guard let shown = try? DocumentationConfigurationBlocks.object(block) else {
                Issue.record("\(block) is not JSON: write `\"…\"` for a value and `\"…\": \"…\"` for the rest")
                continue
            }
            let type = shown["type"] as? String ?? ""
            let real = deliveries.filter { $0.type == type }.compactMap(\.json)
            guard !real.isEmpty else {
                Issue.record("\(block): no \(type) delivery to compare with")
                continue
            }
            // Some delivery of the type has every key shown (a payment without metadata has none).
            let missing = real.map { Self.missingKeys(shown, in: $0) }.min { $0.count < $1.count } ?? []
            for key in missing { Issue.record("\(block) shows \(key), which no real \(type) has") }
        }
    }

    /// Every key the log line block shows is in a real JSON log line of the same message.
    func compareLogLine(_ log: String) throws {
        for block in try Self.blocks(.logLine) {
            let shown = try DocumentationConfigurationBlocks.object(block)
            let real = log.split(separator: "\n").compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
                .last { $0["message"] as? String == shown["message"] as? String && ($0["metadata"] as? [String: Any])?["span_id"] != nil }
            guard let real else {
                Issue.record("\(block): the demo logged no \(shown["message"] ?? "") line to compare with")
                continue
            }
            for missing in Self.missingKeys(shown, in: real) { Issue.record("\(block) shows \(missing), which a real log line lacks") }
        }
    }

    /// The key paths of `shown` that `real` lacks; a `"…"` key stands for the rest.
    static func missingKeys(_ shown: [String: Any], in real: [String: Any], path: String = "") -> [String] {
        shown.flatMap { key, value -> [String] in
            if key == "…" { return [] }
            guard let actual = real[key] else { return [path + key] }
            if let value = value as? [String: Any], let actual = actual as? [String: Any] {
                return missingKeys(value, in: actual, path: path + key + ".")
            }
            return []
        }
    }
}
