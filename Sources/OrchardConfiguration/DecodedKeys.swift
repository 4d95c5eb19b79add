import Foundation

/// The keys a JSON document of a `Decodable` type can set, read from the type's own
/// `init(from:)`: a decoder that answers every key as present records each key the decoding
/// code asks for and the shape of its value, then hands back empty values. So the list is the
/// loader's, not a copy of it: a key added to a configuration section appears here at once. The
/// loader refuses any other key with it (``ConfigurationFile/unknownKey(in:)``), and the
/// configuration reference is checked against it.
package enum DecodedKeys {
    /// The value's shape, in the words the configuration reference uses.
    package enum Shape: String, Sendable {
        case string, integer, number, boolean, object
        case list
        case listOfStrings = "list of strings"
        case listOfIntegers = "list of integers"
        case listOfObjects = "list of objects"
    }

    /// Every key path (`server.host`, `merchants[].processingKeys[].pkcs12`) the type's decoding
    /// reads, with its shape. Lists are `name[]` inside a path.
    package static func of<T: Decodable>(_ type: T.Type) throws -> [String: Shape] {
        let recorder = Recorder()
        _ = try T(from: RecordingDecoder(recorder: recorder, path: ""))
        var shapes = recorder.shapes
        for (path, shape) in recorder.shapes where shape == .list {
            switch shapes.removeValue(forKey: path + "[]") {
            case .string?: shapes[path] = .listOfStrings
            case .integer?: shapes[path] = .listOfIntegers
            case .object?: shapes[path] = .listOfObjects
            default: break
            }
        }
        return shapes
    }

    /// The objects whose keys the type's decoding takes as they come (it reads `allKeys`, as a
    /// processor section does, checked later against its type's keys): no list of keys says
    /// what they may hold.
    package static func openObjects<T: Decodable>(_ type: T.Type) throws -> Set<String> {
        let recorder = Recorder()
        _ = try T(from: RecordingDecoder(recorder: recorder, path: ""))
        return recorder.open
    }

    final class Recorder {
        var shapes: [String: Shape] = [:]
        var open: Set<String> = []

        func mark(_ path: String, _ shape: Shape) {
            if !path.isEmpty { shapes[path] = shape }
        }
    }

    static func join(_ path: String, _ key: any CodingKey) -> String {
        path.isEmpty ? key.stringValue : "\(path).\(key.stringValue)"
    }

    struct RecordingDecoder: Decoder {
        let recorder: Recorder
        let path: String
        var codingPath: [any CodingKey] { [] }
        var userInfo: [CodingUserInfoKey: Any] { [:] }

        func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
            recorder.mark(path, .object)
            return KeyedDecodingContainer(Keyed<Key>(recorder: recorder, path: path))
        }

        func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
            recorder.mark(path, .list)
            return Unkeyed(recorder: recorder, path: path + "[]")
        }

        func singleValueContainer() throws -> any SingleValueDecodingContainer {
            Single(recorder: recorder, path: path)
        }
    }

    /// Every key is present and none is null; each read records its key.
    struct Keyed<Key: CodingKey>: KeyedDecodingContainerProtocol {
        let recorder: Recorder
        let path: String
        var codingPath: [any CodingKey] { [] }
        var allKeys: [Key] {
            recorder.open.insert(path)
            return []
        }

        func contains(_ key: Key) -> Bool { true }
        func decodeNil(forKey key: Key) throws -> Bool { false }

        private func primitive<T>(_ value: T, _ shape: Shape, _ key: Key) -> T {
            recorder.mark(join(path, key), shape)
            return value
        }

        func decode(_ type: Bool.Type, forKey key: Key) throws -> Bool { primitive(false, .boolean, key) }
        func decode(_ type: String.Type, forKey key: Key) throws -> String { primitive("", .string, key) }
        func decode(_ type: Double.Type, forKey key: Key) throws -> Double { primitive(0, .number, key) }
        func decode(_ type: Float.Type, forKey key: Key) throws -> Float { primitive(0, .number, key) }
        func decode(_ type: Int.Type, forKey key: Key) throws -> Int { primitive(0, .integer, key) }
        func decode(_ type: Int8.Type, forKey key: Key) throws -> Int8 { primitive(0, .integer, key) }
        func decode(_ type: Int16.Type, forKey key: Key) throws -> Int16 { primitive(0, .integer, key) }
        func decode(_ type: Int32.Type, forKey key: Key) throws -> Int32 { primitive(0, .integer, key) }
        func decode(_ type: Int64.Type, forKey key: Key) throws -> Int64 { primitive(0, .integer, key) }
        func decode(_ type: UInt.Type, forKey key: Key) throws -> UInt { primitive(0, .integer, key) }
        func decode(_ type: UInt8.Type, forKey key: Key) throws -> UInt8 { primitive(0, .integer, key) }
        func decode(_ type: UInt16.Type, forKey key: Key) throws -> UInt16 { primitive(0, .integer, key) }
        func decode(_ type: UInt32.Type, forKey key: Key) throws -> UInt32 { primitive(0, .integer, key) }
        func decode(_ type: UInt64.Type, forKey key: Key) throws -> UInt64 { primitive(0, .integer, key) }

        func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
            try T(from: RecordingDecoder(recorder: recorder, path: join(path, key)))
        }

        func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws
            -> KeyedDecodingContainer<NestedKey>
        {
            try RecordingDecoder(recorder: recorder, path: join(path, key)).container(keyedBy: type)
        }

        func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
            try RecordingDecoder(recorder: recorder, path: join(path, key)).unkeyedContainer()
        }

        func superDecoder() throws -> any Decoder { RecordingDecoder(recorder: recorder, path: path) }
        func superDecoder(forKey key: Key) throws -> any Decoder { RecordingDecoder(recorder: recorder, path: join(path, key)) }
    }

    /// A list of exactly one element, enough to learn the element's keys.
    struct Unkeyed: UnkeyedDecodingContainer {
        let recorder: Recorder
        let path: String
        var codingPath: [any CodingKey] { [] }
        var count: Int? { 1 }
        var currentIndex = 0
        var isAtEnd: Bool { currentIndex >= 1 }

        init(recorder: Recorder, path: String) {
            self.recorder = recorder
            self.path = path
        }

        mutating func decodeNil() throws -> Bool { false }

        mutating func decode<T: Decodable>(_ type: T.Type) throws -> T {
            currentIndex += 1
            return try T(from: RecordingDecoder(recorder: recorder, path: path))
        }

        mutating func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type) throws -> KeyedDecodingContainer<NestedKey> {
            currentIndex += 1
            return try RecordingDecoder(recorder: recorder, path: path).container(keyedBy: type)
        }

        mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer {
            currentIndex += 1
            return try RecordingDecoder(recorder: recorder, path: path).unkeyedContainer()
        }

        mutating func superDecoder() throws -> any Decoder { RecordingDecoder(recorder: recorder, path: path) }
    }

    struct Single: SingleValueDecodingContainer {
        let recorder: Recorder
        let path: String
        var codingPath: [any CodingKey] { [] }

        func decodeNil() -> Bool { false }

        private func primitive<T>(_ value: T, _ shape: Shape) -> T {
            recorder.mark(path, shape)
            return value
        }

        func decode(_ type: Bool.Type) throws -> Bool { primitive(false, .boolean) }
        func decode(_ type: String.Type) throws -> String { primitive("", .string) }
        func decode(_ type: Double.Type) throws -> Double { primitive(0, .number) }
        func decode(_ type: Float.Type) throws -> Float { primitive(0, .number) }
        func decode(_ type: Int.Type) throws -> Int { primitive(0, .integer) }
        func decode(_ type: Int8.Type) throws -> Int8 { primitive(0, .integer) }
        func decode(_ type: Int16.Type) throws -> Int16 { primitive(0, .integer) }
        func decode(_ type: Int32.Type) throws -> Int32 { primitive(0, .integer) }
        func decode(_ type: Int64.Type) throws -> Int64 { primitive(0, .integer) }
        func decode(_ type: UInt.Type) throws -> UInt { primitive(0, .integer) }
        func decode(_ type: UInt8.Type) throws -> UInt8 { primitive(0, .integer) }
        func decode(_ type: UInt16.Type) throws -> UInt16 { primitive(0, .integer) }
        func decode(_ type: UInt32.Type) throws -> UInt32 { primitive(0, .integer) }
        func decode(_ type: UInt64.Type) throws -> UInt64 { primitive(0, .integer) }

        func decode<T: Decodable>(_ type: T.Type) throws -> T {
            try T(from: RecordingDecoder(recorder: recorder, path: path))
        }
    }
}
