import Foundation
import Hummingbird

/// Serves files held in memory through Hummingbird's `FileMiddleware`: the checkout page built
/// into the binary (`Public/` at build time), used when `server.publicDirectory` is not set.
struct EmbeddedFileProvider: FileProvider {
    struct FileAttributes: FileMiddlewareFileAttributes, Sendable {
        var isFolder: Bool
        var size: Int
        var modificationDate: Date
    }

    /// A relative path without leading or trailing slash; "" is the root folder.
    typealias FileIdentifier = String

    let files: [String: [UInt8]]
    let folders: Set<String>
    let modified: Date

    init(files: [String: [UInt8]], modified: Date) {
        self.files = files
        self.modified = modified
        var folders: Set<String> = [""]
        for path in files.keys {
            var components = path.split(separator: "/").dropLast()
            while !components.isEmpty {
                folders.insert(components.joined(separator: "/"))
                components = components.dropLast()
            }
        }
        self.folders = folders
    }

    /// The page `Public/` held when this binary was built.
    static let builtIn = EmbeddedFileProvider(
        files: EmbeddedPublicFiles.base64.compactMapValues { Data(base64Encoded: $0).map { [UInt8]($0) } },
        modified: Date(timeIntervalSince1970: EmbeddedPublicFiles.modified))

    func getFileIdentifier(_ path: String) -> String? {
        let components = path.split(separator: "/", omittingEmptySubsequences: true)
        // Nothing here resolves outside the table, but a dot segment is never a real request.
        guard !components.contains(where: { $0 == "." || $0 == ".." }) else { return nil }
        return components.joined(separator: "/")
    }

    func getAttributes(id: String) async throws -> FileAttributes? {
        if let bytes = files[id] { return FileAttributes(isFolder: false, size: bytes.count, modificationDate: modified) }
        return folders.contains(id) ? FileAttributes(isFolder: true, size: 0, modificationDate: modified) : nil
    }

    func loadFile(id: String, context: some RequestContext) async throws -> ResponseBody {
        guard let bytes = files[id] else { throw HTTPError(.notFound) }
        return ResponseBody(byteBuffer: ByteBuffer(bytes: bytes))
    }

    func loadFile(id: String, range: ClosedRange<Int>, context: some RequestContext) async throws -> ResponseBody {
        guard let bytes = files[id], range.lowerBound >= 0, range.upperBound < bytes.count else { throw HTTPError(.rangeNotSatisfiable) }
        return ResponseBody(byteBuffer: ByteBuffer(bytes: bytes[range]))
    }
}
