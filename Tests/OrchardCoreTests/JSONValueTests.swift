import Foundation
import OrchardCore
import Testing

/// JSONValue reads any bytes without trapping: what JSON cannot hold, or Swift cannot, is an
/// unreadable value (nil), never a crash; and it writes bodies byte for byte the same each time.
@Suite("JSONValue: decoded by type, hostile input is nil, never a trap")
struct JSONValueTests {
    static func decode(_ text: String) -> JSONValue? { JSONValue.decode(Array(text.utf8)) }

    @Test("each JSON type decodes to its case; the accessors give nil for any other type")
    func types() throws {
        let value = try #require(Self.decode(#"{"s":"x","i":7,"d":1.5,"b":true,"n":null,"a":[1,"y"],"o":{"k":false}}"#))
        #expect(value["s"] == .string("x") && value["s"]?.string == "x" && value["s"]?.int64 == nil)
        #expect(value["i"] == .integer(7) && value["i"]?.int64 == 7 && value["i"]?.bool == nil && value["i"]?.string == nil)
        #expect(value["d"] == .number(1.5) && value["d"]?.int64 == nil && value["d"]?.double == 1.5)
        #expect(value["b"] == .bool(true) && value["b"]?.bool == true && value["b"]?.int64 == nil)
        #expect(value["n"]?.isNull == true && value["missing"] == nil)
        #expect(value["a"]?[1]?.string == "y" && value["a"]?[2] == nil && value["a"]?[-1] == nil && value["a"]?["k"] == nil)
        #expect(value["o"]?["k"]?.bool == false && value["o"]?[0] == nil && value["s"]?["k"] == nil)
        #expect(Self.decode("1")?.bool == nil && Self.decode("0")?.bool == nil, "a number is never read as a boolean")
    }

    @Test("numbers: -0 and 1.0 are integers, past Int64 a Double, past Double unreadable; no conversion traps")
    func numbers() {
        #expect(Self.decode("-0") == .integer(0))
        #expect(Self.decode("1.0") == .integer(1))
        #expect(Self.decode("9223372036854775807") == .integer(.max))
        #expect(Self.decode("-9223372036854775808") == .integer(.min))
        #expect(Self.decode("9223372036854775808") == .number(9_223_372_036_854_775_808))
        #expect(Self.decode("9223372036854775808")?.int64 == nil, "2^63 is past Int64: nil, not a trap")
        #expect(Self.decode("123456789012345678901234567890")?.int64 == nil)
        for unreadable in ["1e400", "-1e400", "1E400", #"{"a":1e400}"#, "[1e999]"] {
            #expect(Self.decode(unreadable) == nil, "\(unreadable)")
        }
        for value in [Double.nan, .infinity, -.infinity, 1e300, -1e300, 0.5, Double(Int64.max)] {
            #expect(JSONValue.number(value).int64 == nil, "\(value)")
        }
        #expect(JSONValue.number(-0.0).int64 == 0)
    }

    @Test("empty, truncated, invalid UTF-8, lone surrogates and deep nesting are nil")
    func hostileText() {
        let deepArray = String(repeating: "[", count: 100_000) + String(repeating: "]", count: 100_000)
        let deepObject = String(repeating: #"{"a":"#, count: 100_000) + "1" + String(repeating: "}", count: 100_000)
        for text in ["", " ", "{", #"{"a":"#, #"{"a" 1}"#, "nul", #""\ud800""#, #"{"a":"\udc00x"}"#, deepArray, deepObject] {
            #expect(Self.decode(text) == nil, "\(text.prefix(20))")
        }
        for bytes: [UInt8] in [[0xFF], [0x22, 0xC3, 0x28, 0x22], [0x7B, 0x22, 0xED, 0xA0, 0x80, 0x22, 0x3A, 0x31, 0x7D], [0x00]] {
            #expect(JSONValue.decode(bytes) == nil, "\(bytes)")
        }
        // Nesting a parser accepts still decodes, without running out of stack.
        let shallow = String(repeating: "[", count: 200) + String(repeating: "]", count: 200)
        #expect(Self.decode(shallow) != nil)
    }

    @Test("bodies: keys sorted by their bytes, slashes unescaped, integers exact; a non-finite number throws")
    func encoding() throws {
        let body: JSONValue = [
            "b": "https://example.com/a", "a": ["z": 1, "Z": .integer(.max), "a10": true, "a2": .null], "c": [.number(0.5), "x"],
        ]
        let text = String(decoding: try body.encoded(), as: UTF8.self)
        #expect(text == #"{"a":{"Z":9223372036854775807,"a10":true,"a2":null,"z":1},"b":"https://example.com/a","c":[0.5,"x"]}"#)
        #expect(JSONValue.decode(try body.encoded()) == body, "what is written reads back the same")
        #expect(throws: (any Error).self) { try JSONValue.number(.nan).encoded() }
        #expect(throws: (any Error).self) { try JSONValue.array([.number(.infinity)]).encoded() }
    }

    @Test("a repeated key in a literal keeps its last value; setting nil removes a key; setting on a non-object does nothing")
    func building() {
        let repeated = JSONValue(dictionaryLiteral: ("k", 1), ("k", 2))
        #expect(repeated["k"] == .integer(2))
        var object: JSONValue = ["a": 1]
        object["b"] = .string("x")
        object["a"] = nil
        #expect(object == ["b": "x"])
        var string: JSONValue = "text"
        string["a"] = 1
        #expect(string == "text")
    }
}
