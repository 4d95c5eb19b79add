import Foundation
import OrchardTesting
import Testing

@testable import WalletOrders

@Suite("StoredZip: the package's zip, read back by Python's zipfile")
struct StoredZipTests {
    /// Reads an archive with Python's `zipfile` (an implementation apart from ours): checks every
    /// CRC, then prints each entry as `name size sha256 time`.
    static let reader = #"""
        import hashlib, sys, zipfile
        with zipfile.ZipFile(sys.argv[1]) as archive:
            bad = archive.testzip()
            if bad is not None:
                sys.exit("bad CRC: " + bad)
            for info in archive.infolist():
                data = archive.read(info)
                print(info.filename, info.file_size, info.compress_type, hashlib.sha256(data).hexdigest(), "%04d-%02d-%02dT%02d:%02d:%02d" % info.date_time)
        """#

    static func listed(_ archive: [UInt8]) async throws -> [String] {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("zip-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let file = folder.appendingPathComponent("package.order")
        try Data(archive).write(to: file)
        let result = try await OrchardProcess.tool("python3", ["-c", reader, file.path])
        #expect(result.status == 0, "\(result.stderr)")
        return String(decoding: result.stdout, as: UTF8.self).split(separator: "\n").map(String.init)
    }

    @Test("entries come back whole, in order, stored, with their names and the given time")
    func roundTrip() async throws {
        let logo = (0..<70_000).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        let entries = [
            StoredZip.Entry(path: "order.json", bytes: Array(#"{"a":1}"#.utf8)),
            StoredZip.Entry(path: "manifest.json", bytes: []),
            StoredZip.Entry(path: "images/logo@2x.png", bytes: logo),
            StoredZip.Entry(path: "fr.lproj/order.strings", bytes: Array("\"é\" = \"ü\";".utf8)),
        ]
        let modified = Date(timeIntervalSince1970: 1_795_000_001)  // 2026-11-18T11:06:41Z; DOS keeps even seconds
        let lines = try await Self.listed(try StoredZip.archive(entries, modified: modified))
        let expected = entries.map { entry in
            "\(entry.path) \(entry.bytes.count) 0 \(sha256Hex(entry.bytes)) 2026-11-18T11:06:40"
        }
        #expect(lines == expected)
    }

    @Test("CRC-32 of the standard check string is 0xCBF43926")
    func crc() {
        #expect(CRC32.checksum(Array("123456789".utf8)) == 0xCBF4_3926)
        #expect(CRC32.checksum([]) == 0)
    }

    @Test("paths that would leave the archive's folder, or repeat, are refused")
    func refusals() {
        for path in ["", "/etc/passwd", "../x", "a/../b", "a//b", "./a", "a\\b", String(repeating: "a", count: 1025)] {
            #expect(throws: StoredZip.Failure.badPath(path)) {
                try StoredZip.archive([.init(path: path, bytes: [])], modified: Date())
            }
        }
        #expect(throws: StoredZip.Failure.duplicatePath("a")) {
            try StoredZip.archive([.init(path: "a", bytes: [1]), .init(path: "a", bytes: [2])], modified: Date())
        }
    }

    @Test("the same entries and time give the same bytes")
    func deterministic() throws {
        let entries = [StoredZip.Entry(path: "a", bytes: [1, 2, 3])]
        let time = Date(timeIntervalSince1970: 1_700_000_000)
        #expect(try StoredZip.archive(entries, modified: time) == StoredZip.archive(entries, modified: time))
    }
}

func sha256Hex(_ bytes: [UInt8]) -> String {
    WalletOrderManifest.sha256Hex(bytes)
}
