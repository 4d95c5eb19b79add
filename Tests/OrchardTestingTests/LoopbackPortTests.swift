import Foundation
import OrchardTesting
import Testing

#if canImport(Glibc)
    import Glibc
#endif

@Suite("Finding the ports a process listens on")
struct LoopbackPortTests {
    /// A socket listening on a loopback port the kernel picks; its descriptor and port.
    static func listener() throws -> (descriptor: Int32, port: Int) {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        try #require(descriptor >= 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(descriptor, $0, length) == 0 && listen(descriptor, 1) == 0 && getsockname(descriptor, $0, &length) == 0
            }
        }
        try #require(bound)
        return (descriptor, Int(UInt16(bigEndian: address.sin_port)))
    }

    @Test("every listener is found when the kernel's table is longer than a page (Foundation read only its first 4 KB)")
    func longTable() throws {
        // 80 rows of ~150 bytes: about three pages of /proc/<pid>/net/tcp from this process alone.
        let listeners = try (0..<80).map { _ in try Self.listener() }
        defer { for listener in listeners { close(listener.descriptor) } }
        let found = LoopbackPort.listening(pid: getpid())
        #expect(Set(listeners.map(\.port)).isSubset(of: found), "found \(found.count) of \(listeners.count)")
    }
}
