import Foundation
import OrchardTesting
import Testing

#if canImport(Glibc)
    import Glibc
#endif

@Suite("Child processes of the tests")
struct ChildProcessTests {
    @Test("a child gets standard input, output and error, and none of the test process's other descriptors")
    func inheritsNoDescriptor() async throws {
        // Opened as SwiftNIO opens its sockets: without close-on-exec. A child that kept it would
        // hold an in-process server's connection open after the server closed it.
        let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        try #require(socket > 2)
        defer { close(socket) }
        let probe = "for fd in 0 1 2 \(socket); do if [ -e /proc/$$/fd/$fd ]; then echo $fd; fi; done"
        let result = try await OrchardProcess.tool("sh", ["-c", probe])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(String(decoding: result.stdout, as: UTF8.self).split(separator: "\n") == ["0", "1", "2"])
    }
}
