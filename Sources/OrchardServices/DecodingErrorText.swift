import Foundation

/// A JSON decoding error as a reader can act on it: the key path and what was wrong there
/// (`merchants[0].domains should be Array<String>`), for configuration files and request bodies alike.
public enum DecodingErrorText {
    public static func describe(_ error: any Error) -> String {
        switch error {
        case DecodingError.keyNotFound(let key, let context):
            return "missing key \(Self.path(context.codingPath + [key]))"
        case DecodingError.typeMismatch(let type, let context):
            return "\(Self.path(context.codingPath)) should be \(type)"
        case DecodingError.valueNotFound(let type, let context):
            return "\(Self.path(context.codingPath)) should be \(type), not null"
        case DecodingError.dataCorrupted(let context):
            return context.codingPath.isEmpty ? "not valid JSON" : "\(Self.path(context.codingPath)): \(context.debugDescription)"
        default:
            return "\(error)"
        }
    }

    private static func path(_ keys: [any CodingKey]) -> String {
        keys.map { $0.intValue.map { "[\($0)]" } ?? ".\($0.stringValue)" }.joined().trimmingPrefix(".").description
    }
}
