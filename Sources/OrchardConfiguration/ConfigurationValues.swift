import Foundation
import OrchardCore
import OrchardServices

/// Reads what the configuration names: `env:NAME` from the environment given, anything else
/// as a file, relative to the configuration's folder.
struct ConfigurationValues: ConfigurationReader {
    var folder: String
    var environment: [String: String]

    func path(_ value: String) -> String {
        value.hasPrefix("/") ? value : URL(fileURLWithPath: folder).appendingPathComponent(value).standardizedFileURL.path
    }

    func describe(_ value: String) -> String {
        value.hasPrefix("env:") ? value : path(value)
    }

    func read(_ value: String, what: String) throws(ConfigurationError) -> [UInt8] {
        if value.hasPrefix("env:") {
            let name = String(value.dropFirst(4))
            guard let text = environment[name], !text.isEmpty else {
                throw ConfigurationError("\(value): environment variable \(name) for \(what) is not set")
            }
            return Array(text.utf8)
        }
        let full = path(value)
        do {
            return [UInt8](try Data(contentsOf: URL(fileURLWithPath: full)))
        } catch {
            throw ConfigurationError("\(full): cannot read \(what) (\(ServerConfiguration.reason(error)))")
        }
    }
}
