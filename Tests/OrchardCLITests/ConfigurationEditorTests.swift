import Foundation
import OrchardRuntime
import OrchardTesting
import Testing

@testable import orchard

/// `certs rotate` edits the operator's JSON by byte ranges: what it adds or removes changes, the
/// rest stays byte for byte.
@Suite("Configuration editor")
struct ConfigurationEditorTests {
    static let compact =
        #"{"merchants":[{"merchantIdentifier":"merchant.a","processingKeys":[{"privateKey":"a.key"}]},"#
        + #"{"merchantIdentifier":"merchant.b","identity":{"pkcs12":"b.p12","password":"env:P"},"displayName":"B"}]}"#

    static let indented = """
        {
            "merchants": [
                {
                    "merchantIdentifier": "merchant.a",
                    "identityCertificate": "old.pem",
                    "identityKey": "old.key",
                    "identityKeyPassword": "env:KEY_PASSWORD",
                    "processingKeys": [
                        {"privateKey": "a.key"},
                        {"privateKey": "b.key"}
                    ]
                }
            ]
        }

        """

    func editor(_ text: String) -> ConfigurationEditor { ConfigurationEditor(bytes: Array(text.utf8)) }

    func keys(_ editor: ConfigurationEditor, _ merchant: String) throws -> Range<Int> {
        let members = try editor.merchant(merchant).members
        return try #require(members.first { $0.key == "processingKeys" }).value
    }

    @Test("an entry is appended in the list's own layout, compact or indented")
    func append() throws {
        var compact = editor(Self.compact)
        try compact.append(#"{"privateKey": "n.key"}"#, toArrayAt: try keys(compact, "merchant.a").lowerBound)
        #expect(
            String(decoding: compact.bytes, as: UTF8.self)
                == Self.compact.replacingOccurrences(of: #""a.key"}]"#, with: #""a.key"},{"privateKey": "n.key"}]"#))

        var indented = editor(Self.indented)
        try indented.append(#"{"privateKey": "n.key"}"#, toArrayAt: try keys(indented, "merchant.a").lowerBound)
        #expect(
            String(decoding: indented.bytes, as: UTF8.self)
                == Self.indented.replacingOccurrences(
                    of: #"{"privateKey": "b.key"}"#, with: "{\"privateKey\": \"b.key\"},\n                {\"privateKey\": \"n.key\"}"))
    }

    @Test("removing the first, the last or the only element leaves valid JSON and the rest unchanged")
    func remove() throws {
        for (index, expected) in [(0, #"{"privateKey": "b.key"}"#), (1, #"{"privateKey": "a.key"}"#)] {
            var edited = editor(Self.indented)
            let list = try keys(edited, "merchant.a")
            let elements = try edited.elements(list.lowerBound).elements
            edited.remove(elements[index], from: elements)
            let text = String(decoding: edited.bytes, as: UTF8.self)
            #expect(text.contains("[\n                \(expected)\n            ]"), "\(text)")
            #expect(try JSONSerialization.jsonObject(with: Data(edited.bytes)) is [String: Any])
        }
        var compact = editor(Self.compact)
        let list = try keys(compact, "merchant.a")
        let only = try compact.elements(list.lowerBound).elements
        compact.remove(only[0], from: only)
        #expect(
            String(decoding: compact.bytes, as: UTF8.self) == Self.compact.replacingOccurrences(of: #"{"privateKey":"a.key"}"#, with: ""))
    }

    @Test("the identity switch replaces a pair (dropping its password) or a PKCS#12 identity")
    func switchIdentity() throws {
        var pair = editor(Self.indented)
        try Rotation.switchIdentity(&pair, try pair.merchant("merchant.a").members, #""new.pem""#, #""new.key""#)
        let text = String(decoding: pair.bytes, as: UTF8.self)
        #expect(
            text
                == Self.indented.replacingOccurrences(of: "old.pem", with: "new.pem").replacingOccurrences(of: "old.key", with: "new.key")
                .replacingOccurrences(of: "\"identityKeyPassword\": \"env:KEY_PASSWORD\",\n            ", with: ""), "\(text)")

        var pkcs12 = editor(Self.compact)
        try Rotation.switchIdentity(&pkcs12, try pkcs12.merchant("merchant.b").members, #""new.pem""#, #""new.key""#)
        #expect(
            String(decoding: pkcs12.bytes, as: UTF8.self)
                == Self.compact.replacingOccurrences(
                    of: #""identity":{"pkcs12":"b.p12","password":"env:P"}"#,
                    with: #""identityCertificate": "new.pem","identityKey": "new.key""#))
    }

    @Test("an unknown merchant or a file that is not JSON is refused")
    func refusals() {
        #expect(throws: CommandFailure.self) { try editor(Self.compact).merchant("merchant.c") }
        #expect(throws: CommandFailure.self) { try editor(#"{"merchants": [{"merchantIdentifier": "merchant.a""#).merchant("merchant.a") }
    }
}
