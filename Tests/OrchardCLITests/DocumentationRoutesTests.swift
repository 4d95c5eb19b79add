import Foundation
import OrchardTesting
import Testing

/// The route tables of docs/http-api.md name exactly the operations of the OpenAPI document,
/// which `OpenAPITests` keeps equal to the router.
@Suite("Documentation routes")
struct DocumentationRoutesTests {
    static let root = OrchardProcess.repositoryRoot

    /// `GET /v1/payments/{id}` for each operation of the OpenAPI document.
    static func operations() throws -> Set<String> {
        let data = try Data(contentsOf: root.appendingPathComponent("Sources/OrchardServer/OpenAPI/openapi.json"))
        let document = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        let paths = try #require(document["paths"] as? [String: [String: Any]])
        var operations: Set<String> = []
        for (path, item) in paths {
            for method in item.keys where ["get", "put", "post", "delete", "patch"].contains(method) {
                operations.insert("\(method.uppercased()) \(path)")
            }
        }
        return operations
    }

    /// The first cells of table rows that name an operation: `| \`POST /api/orders\` | … |`.
    static func documented(_ text: String) -> [String] {
        text.split(separator: "\n").compactMap { line in
            let cells = line.split(separator: "|", omittingEmptySubsequences: false)
            guard line.hasPrefix("| `"), cells.count > 2 else { return nil }
            let cell = cells[1].trimmingCharacters(in: .whitespaces)
            guard cell.hasPrefix("`"), cell.hasSuffix("`"), let method = cell.dropFirst().split(separator: " ").first,
                ["GET", "PUT", "POST", "DELETE", "PATCH"].contains(method)
            else { return nil }
            return String(cell.dropFirst().dropLast())
        }
    }

    @Test("docs/http-api.md has a row for each operation of the OpenAPI document, and none it lacks")
    func routes() throws {
        let text = try String(contentsOf: Self.root.appendingPathComponent("docs/http-api.md"), encoding: .utf8)
        let documented = Self.documented(text)
        let operations = try Self.operations()
        #expect(operations.count > 30, "the document's operations were read (\(operations.count))")
        for operation in operations.subtracting(documented).sorted() { Issue.record("docs/http-api.md has no row for \(operation)") }
        for operation in Set(documented).subtracting(operations).sorted() {
            Issue.record("docs/http-api.md documents \(operation), which the OpenAPI document does not have")
        }
        #expect(documented.count == Set(documented).count, "each operation has one row")
    }

    @Test("the row reader takes one operation per row and nothing else")
    func reader() {
        let text = "| route | what |\n|---|---|\n| `GET /a/{id}` | x |\n| `server.host` | y |\nprose `POST /b`\n| `DELETE /c` | z |"
        #expect(Self.documented(text) == ["GET /a/{id}", "DELETE /c"])
    }
}
