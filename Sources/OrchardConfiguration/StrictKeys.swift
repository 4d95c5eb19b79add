import Foundation

/// Refuses keys a section does not read: a typo would otherwise be ignored silently.
enum StrictKeys {
    struct Key: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    static func check(_ decoder: any Decoder, known: [String]) throws {
        let container = try decoder.container(keyedBy: Key.self)
        if let unknown = container.allKeys.map(\.stringValue).sorted().first(where: { !known.contains($0) }) {
            throw DecodingError.dataCorrupted(
                .init(
                    codingPath: decoder.codingPath + [Key(stringValue: unknown)],
                    debugDescription: "not a setting (this section reads: \(known.joined(separator: ", ")))"))
        }
    }
}
