import Testing

@testable import WebProxyDaemon

@Suite struct JSONValueTests {
    @Test func readsEveryKind() throws {
        let text = #" { "a" : [1, -20, 0, true, false, null, "x\u00e9\ud83d\ude00"], "b": {}, "c": [] } "#
        #expect(
            try JSONValue(parsing: Array(text.utf8))
                == .object([
                    "a": .array([.integer(1), .integer(-20), .integer(0), .bool(true), .bool(false), .null, .string("xé😀")]),
                    "b": .object([:]), "c": .array([]),
                ]))
    }

    @Test func writesWhatItReads() throws {
        let value = JSONValue.object([
            "list": .array([.integer(Int.max), .integer(-1), .null, .bool(true)]), "empty": .object([:]),
            "name": .string("a/b \"c\""),
        ])
        #expect(try JSONValue(parsing: Array(value.prettyPrinted.utf8)) == value)
    }

    @Test(arguments: [
        "", " ", "{", "[1,]", "[1 2]", "{\"a\":1,}", "{\"a\" 1}", "{a:1}", "{\"a\":1}x", "01", "-", "1.5", "1e3",
        "+1", "tru", "nul", "\"unterminated", "\"\u{1}\"", "9223372036854775808", "{\"a\":1,\"a\":2}", "[\"\\ud800\"]",
    ])
    func rejects(_ text: String) {
        #expect(throws: JSONValue.Invalid.self) { try JSONValue(parsing: Array(text.utf8)) }
    }

    @Test func nestingIsBounded() throws {
        let depth = JSONValue.maxDepth
        let deepest = String(repeating: "[", count: depth + 1) + String(repeating: "]", count: depth + 1)
        _ = try JSONValue(parsing: Array(deepest.utf8))
        let tooDeep = "[" + deepest + "]"
        #expect(throws: JSONValue.Invalid.self) { try JSONValue(parsing: Array(tooDeep.utf8)) }
        // Far deeper input fails the same way, without exhausting the stack.
        let hostile = String(repeating: "[", count: 100_000)
        #expect(throws: JSONValue.Invalid.self) { try JSONValue(parsing: Array(hostile.utf8)) }
    }

    @Test func statusDocumentRejectsWrongShapes() {
        let valid = String(decoding: StatusTableTests.document.encoded(), as: UTF8.self)
        for broken in [
            valid.replacing("\"pid\" : 4321", with: "\"pid\" : 4294967296"),
            valid.replacing("\"state\" : \"up\"", with: "\"state\" : \"sideways\""),
            valid.replacing("\"streams\" : 12", with: "\"streams\" : \"12\""),
            valid.replacing("\"version\" : \"1.2.3\"", with: "\"release\" : \"1.2.3\""),
            "[]",
        ] {
            #expect(throws: JSONValue.Invalid.self) { try StatusDocument(decoding: Array(broken.utf8)) }
        }
    }
}
