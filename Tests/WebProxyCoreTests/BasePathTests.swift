import Testing
@testable import WebProxyCore

@Suite struct BasePathTests {
    /// PROTOCOL.md §2.4 valid vectors plus boundaries.
    @Test(arguments: [
        (" /dobry-cola-super-app/ ", "dobry-cola-super-app"),
        (" /two/segments/ ", "two/segments"),
        ("MixedCase", "MixedCase"),
        ("/a", "a"),
        ("a/", "a"),
        ("0", "0"),
        ("a_b-c/D9_/x-", "a_b-c/D9_/x-"),
        (String(repeating: "a", count: 128), String(repeating: "a", count: 128)),
        ("/" + String(repeating: "b", count: 128) + "/", String(repeating: "b", count: 128)),
        ("\t/tab/\n", "tab"),
    ])
    func normalizes(_ input: String, _ expected: String) throws {
        let path = try BasePath(input)
        #expect(path.value == expected)
        #expect(path.pathPrefix == "/" + expected)
        #expect(path.description == expected)
    }

    /// PROTOCOL.md §2.4 invalid vectors plus more.
    @Test(arguments: [
        "-lead", "a/-lead", "with space", "empty//segment", "trailing//", "per%20cent", "dot.ted",
        "..", String(repeating: "a", count: 129), "", " ", "/", "//", "///", "_under",
        "a/_b", "ümlaut", "a\\b", "a?b", "a#b", "a/./b", "//lead", "a//",
        "/" + String(repeating: "a", count: 129) + "/",
    ])
    func rejects(_ input: String) {
        let error = #expect(throws: IdentityError.self) { try BasePath(input) }
        #expect(error?.code == .invalidBasePath)
    }

    @Test func caseIsSignificant() throws {
        #expect(try BasePath("MixedCase") != BasePath("mixedcase"))
    }

    @Test(arguments: ["", "  ", "/", " / "])
    func blankOrSlashMeansRoot(_ input: String) throws {
        #expect(try BasePath.optional(input) == nil)
    }

    @Test func optionalNormalizesAndValidatesOtherwise() throws {
        #expect(try BasePath.optional(" /two/segments/ ")?.value == "two/segments")
        #expect(throws: IdentityError.self) { try BasePath.optional("dot.ted") }
        #expect(throws: IdentityError.self) { try BasePath.optional("//") }
    }
}
