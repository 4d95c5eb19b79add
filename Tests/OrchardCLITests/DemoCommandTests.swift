import CurlClient
import Foundation
import OrchardTesting
import Synchronization
import Testing

@Suite("orchard-sandbox demo as a process")
struct DemoCommandTests {
    /// Starts the demo in `folder` and returns it with the port it printed (waited for off the
    /// cooperative pool).
    func startDemo(in folder: URL, _ arguments: [String] = []) async throws -> (process: ChildProcess, port: Int) {
        try await offPool { try startDemoBlocking(in: folder, arguments) }
    }

    func startDemoBlocking(in folder: URL, _ arguments: [String] = []) throws -> (process: ChildProcess, port: Int) {
        let process = try ChildProcess(
            OrchardProcess.sandbox.path, ["demo", "--port", "0", "--log-level", "error"] + arguments, currentDirectory: folder.path,
            output: .captureStdout)
        let port = Mutex<Int?>(nil)
        let found = DispatchSemaphore(value: 0)
        Thread {
            var text = ""
            while port.withLock({ $0 }) == nil {
                let chunk = process.readOutput()
                if chunk.isEmpty { break }
                text += String(decoding: chunk, as: UTF8.self)
                if let range = text.range(of: #"checkout page:\s+http://localhost:(\d+)/"#, options: .regularExpression) {
                    let digits = text[range].split(separator: ":").last?.filter(\.isNumber) ?? ""
                    port.withLock { $0 = Int(digits) }
                }
            }
            found.signal()
        }.start()
        _ = found.wait(timeout: .now() + 60)
        guard let bound = port.withLock({ $0 }) else {
            process.send(SIGTERM)
            process.wait()
            throw DemoDidNotStart()
        }
        return (process, bound)
    }

    struct DemoDidNotStart: Error {}

    @Test("started outside the repository, the demo serves the built-in checkout page and takes orders")
    func demoOutsideRepository() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        // A temporary folder is not a checkout: no Public/ or Config/ beside it.
        #expect(!FileManager.default.fileExists(atPath: directory.path("Public")))
        let (process, port) = try await startDemo(in: directory.url)
        defer {
            process.send(SIGTERM)
            process.wait()
        }
        let client = try CurlHTTPClient(configuration: .init(allowedSchemes: ["http"]))
        defer { client.shutdown() }
        let base = "http://127.0.0.1:\(port)"
        let page = try await client.execute(CurlRequest(url: base + "/", headers: [(name: "Host", value: "localhost")]))
        #expect(page.status == 200)
        let index = try Data(contentsOf: OrchardProcess.repositoryRoot.appendingPathComponent("Public/index.html"))
        #expect(page.body == [UInt8](index), "the page is Public/index.html as it was built")
        let order = try await client.execute(
            CurlRequest(
                method: "POST", url: base + "/api/orders",
                headers: [(name: "Host", value: "localhost"), (name: "Content-Type", value: "application/json")],
                body: Array(#"{"items": [{"productId": "apple-box", "quantity": 1}]}"#.utf8)))
        #expect(order.status == 201, "the built-in demo catalogue sells")
        #expect(FileManager.default.fileExists(atPath: directory.path(".orchard/demo/catalogue.json")))
    }

    @Test("the demo's built-in catalogue is Config/catalogue.json")
    func builtInCatalogue() throws {
        let root = OrchardProcess.repositoryRoot
        #expect(
            try Data(contentsOf: root.appendingPathComponent("Sources/OrchardTesting/demo-catalogue.json"))
                == Data(contentsOf: root.appendingPathComponent("Config/catalogue.json")))
    }
}
