import Foundation

/// A startup problem: one line naming the file or key and what is wrong.
public struct ConfigurationError: Error, Sendable, CustomStringConvertible {
    public var message: String
    /// Where in Orchard's sources the refusal was made (`Module/File.swift:line`), and where the
    /// refusals it wraps were: never shown to users; the test that feeds every refusal to
    /// `orchard serve` and `orchard doctor` checks that each site is reached.
    public var sites: [String]

    public init(_ message: String, fileID: String = #fileID, line: Int = #line) {
        self.message = message
        self.sites = ["\(fileID):\(line)"]
    }

    /// A refusal that restates `wrapped` (a prefix naming the key, say): it keeps `wrapped`'s sites.
    public init(_ message: String, wrapping wrapped: ConfigurationError, fileID: String = #fileID, line: Int = #line) {
        self.message = message
        self.sites = wrapped.sites + ["\(fileID):\(line)"]
    }

    public var description: String { message }
}

/// Reads what a configuration names: `env:NAME` from the environment the configuration was given,
/// anything else as a file relative to the configuration's folder. Adapters that resolve their
/// own sections (processors) read through it, so nothing reads the environment unasked.
public protocol ConfigurationReader {
    /// The bytes behind `reference`; `what` names the key in the message when it cannot be read.
    func read(_ reference: String, what: String) throws(ConfigurationError) -> [UInt8]
    /// `env:NAME` as is, a file as its full path: for messages.
    func describe(_ reference: String) -> String
}

extension String {
    /// The string with every trailing `suffix` removed (`https://x//` → `https://x`).
    public func trimmingSuffix(_ suffix: String) -> String {
        var text = self
        while text.hasSuffix(suffix) { text.removeLast(suffix.count) }
        return text
    }
}
