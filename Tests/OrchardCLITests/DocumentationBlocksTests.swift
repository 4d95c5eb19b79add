import Foundation
import OrchardIntegrationTesting
import OrchardServerTesting
import OrchardTesting
import Testing

/// Every fenced block of the README and `docs/` is run here, or marked with a word docs/README.md
/// defines (docs/README.md, "How these pages are tested", says how each kind runs).
@Suite("Documentation blocks", .serialized)
struct DocumentationBlocksTests {
    /// Who runs an unmarked block.
    enum Runner: String {
        case production, repository, demo, unknownPayment, configuration, event, logLine, python
    }

    static func runner(_ block: DocumentationBlocks.Block) -> Runner? {
        guard block.mark == nil else { return nil }
        switch block.language {
        case "sh":
            if block.text.contains("orchard certs csr") { return .production }
            if block.text.contains("promtool") { return .repository }
            if block.text.contains("orchard payments resolve") { return .unknownPayment }
            return .demo
        case "json":
            guard let object = try? DocumentationConfigurationBlocks.object(block) else { return .event }
            if object["level"] != nil { return .logLine }
            return object["type"] != nil ? .event : .configuration
        case "python": return .python
        default: return nil
        }
    }

    static func blocks(_ runner: Runner) throws -> [DocumentationBlocks.Block] {
        try DocumentationBlocks.all().filter { Self.runner($0) == runner }
    }

    @Test("every fenced block is run by this suite or marked with a word docs/README.md defines")
    func everyBlockRunOrMarked() throws {
        let blocks = try DocumentationBlocks.all()
        let vocabulary = try DocumentationBlocks.vocabulary()
        #expect(vocabulary.count >= 5, "docs/README.md defines the marking words (\(vocabulary.keys.sorted()))")
        #expect(blocks.count > 25, "the pages' blocks were found (\(blocks.count))")
        #expect(blocks.contains { $0.file == "docs/platform-integrators.md" && $0.text.hasPrefix("export ORCHARD_ADMIN_TOKEN") })
        for block in blocks {
            if let problem = DocumentationBlocks.problem(block, vocabulary: vocabulary) { Issue.record(Comment(rawValue: problem)) }
            if block.mark == nil && Self.runner(block) == nil { Issue.record("\(block): no runner takes it") }
        }
    }

    @Test("the check finds an indented fence, and fails an unknown word, an unmarked block and a needless mark")
    func checkCanFail() {
        let page = """
            1. Step:

               ```sh
               orchard keys list
               ```

            ```html
            <div></div>
            ```

            ```sh podman-less
            echo
            ```

            ```sh container
            orchard keys list
            ```
            """
        let blocks = DocumentationBlocks.blocks(in: page, file: "page.md")
        #expect(blocks.map(\.line) == [3, 7, 11, 15])
        #expect(blocks.first?.text == "orchard keys list\n", "the list item's indentation is not the block's")
        let vocabulary = DocumentationBlocks.vocabulary(
            in: "## How these pages are tested\n\n- `container`: needs a container engine; in a block: `docker `, `podman `.\n")
        #expect(vocabulary["container"]?.signs == ["docker ", "podman "])
        let problems = blocks.map { DocumentationBlocks.problem($0, vocabulary: vocabulary) }
        #expect(problems[0] == nil)
        #expect(problems[1]?.contains("no runner") == true)
        #expect(problems[2]?.contains("does not define") == true)
        #expect(problems[3]?.contains("run it instead") == true)
    }

    @Test("the production steps run in an empty folder, and promtool checks the shipped rules")
    func productionSteps() async throws {
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        let production = try Self.blocks(.production)
        #expect(production.contains { $0.file == "README.md" }, "the README's first production step is a block")
        for block in production {
            try await DocumentationShell(directory: folder.url, server: "http://127.0.0.1:9").run(block)
        }
        #expect(FileManager.default.fileExists(atPath: folder.path("keys/identity.csr")))
        for block in try Self.blocks(.repository) {
            try await DocumentationShell(directory: OrchardProcess.repositoryRoot, server: "http://127.0.0.1:9").run(block)
        }
    }

    @Test("the configuration blocks load, and the doctor passes the README's complete example")
    func configurationBlocks() async throws {
        let blocks = try Self.blocks(.configuration)
        let setup = try DocumentationConfigurationBlocks()
        defer { setup.folder.remove() }
        let complete = try #require(blocks.first { $0.file == "README.md" }, "the README's example is a json block")
        let base = try DocumentationConfigurationBlocks.object(complete)
        if let refusal = try setup.load(base, as: "readme") { Issue.record("\(complete) is refused: \(refusal)") }
        let doctor = try await setup.doctor(base, as: "readme")
        #expect(
            doctor.status == 0,
            "\(complete): orchard doctor \(doctor.exit):\n\(String(decoding: doctor.stdout, as: UTF8.self))\(doctor.stderr)")
        for (index, block) in blocks.enumerated() where block.file != complete.file || block.line != complete.line {
            let merged = DocumentationConfigurationBlocks.merged(base, try DocumentationConfigurationBlocks.object(block))
            if let refusal = try setup.load(merged, as: "fragment\(index)") {
                Issue.record("\(block), merged into the README's example, is refused: \(refusal)")
            } else if block.text.contains("\"postgres\"") && PostgresServer.enabled {
                let doctor = try await setup.doctorOnPostgres(merged, as: "fragment\(index)")
                let output = String(decoding: doctor.stdout, as: UTF8.self)
                #expect(
                    doctor.status == 0 && output.contains("PostgreSQL"),
                    "\(block): orchard doctor \(doctor.exit):\n\(output)\(doctor.stderr)")
            }
        }
        // A block marked otel-build is refused by this build for that reason alone.
        for block in try DocumentationBlocks.all() where block.mark == "otel-build" && block.language == "json" {
            let merged = DocumentationConfigurationBlocks.merged(base, try DocumentationConfigurationBlocks.object(block))
            let refusal = try setup.load(merged, as: "otel")
            #expect(refusal?.contains("OTel") == true, "\(block): \(refusal ?? "loaded")")
        }
    }
}
