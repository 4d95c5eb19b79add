import Foundation

/// Build tool: writes a Swift file holding every file under a folder (base64, by relative path),
/// so the checkout page and the OpenAPI document ship inside the `orchard` binary. Run by the
/// EmbedPublic plugin.
///
/// Usage: `EmbedFiles <folder> <output.swift> [<enum name>]` (default `EmbeddedPublicFiles`)
@main
enum EmbedFiles {
    static func main() throws {
        let arguments = CommandLine.arguments
        guard (3...4).contains(arguments.count) else {
            FileHandle.standardError.write(Data("usage: EmbedFiles <folder> <output.swift> [<enum name>]\n".utf8))
            exit(2)
        }
        let name = arguments.count == 4 ? arguments[3] : "EmbeddedPublicFiles"
        let root = URL(fileURLWithPath: arguments[1]).standardizedFileURL
        var entries: [(path: String, data: Data)] = []
        var newest = Date(timeIntervalSince1970: 0)
        let keys: [URLResourceKey] = [.isRegularFileKey, .contentModificationDateKey]
        guard let walker = FileManager.default.enumerator(at: root, includingPropertiesForKeys: keys, options: [.skipsHiddenFiles])
        else { throw CocoaError(.fileReadNoSuchFile, userInfo: [NSFilePathErrorKey: root.path]) }
        for case let url as URL in walker {
            let values = try url.resourceValues(forKeys: Set(keys))
            guard values.isRegularFile == true else { continue }
            let relative = String(url.standardizedFileURL.path.dropFirst(root.path.count)).trimmingPrefix("/")
            entries.append((String(relative), try Data(contentsOf: url)))
            newest = max(newest, values.contentModificationDate ?? newest)
        }
        entries.sort { $0.path < $1.path }
        var source = "// Generated at build time from \(root.lastPathComponent)/ by EmbedFiles; not in git, do not edit.\n"
        source += "enum \(name) {\n"
        source += "    /// The newest file's modification time (seconds since 1970), for Last-Modified and ETag.\n"
        source += "    static let modified: Double = \(newest.timeIntervalSince1970.rounded(.down))\n"
        source += "    /// Relative path → base64 content.\n"
        source += "    static let base64: [String: String] = [\n"
        for entry in entries {
            source += "        \(literal(entry.path)): \"\(entry.data.base64EncodedString())\",\n"
        }
        source += "    ]\n}\n"
        try Data(source.utf8).write(to: URL(fileURLWithPath: arguments[2]), options: .atomic)
    }

    /// A Swift string literal for a path (quotes and backslashes escaped).
    static func literal(_ text: String) -> String {
        "\"" + text.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"") + "\""
    }
}
