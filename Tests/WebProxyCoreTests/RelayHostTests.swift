import Testing
@testable import WebProxyCore

@Suite struct RelayHostTests {
    static let label63 = String(repeating: "a", count: 63)
    static let label64 = String(repeating: "a", count: 64)
    /// 63 + 1 + 63 + 1 + 63 + 1 + 61 = 253 characters.
    static let name253 = [label63, label63, label63, String(repeating: "b", count: 61)]
        .joined(separator: ".")

    /// PROTOCOL.md §2.3 valid vectors plus edge cases.
    @Test(arguments: [
        (" Proxy.Example.COM ", "proxy.example.com"),
        ("bücher.example", "xn--bcher-kva.example"),
        ("xn--strae-oqa.example", "xn--strae-oqa.example"),
        ("XN--STRAE-OQA.Example", "xn--strae-oqa.example"),
        ("XN--BCHER-KVA.EXAMPLE", "xn--bcher-kva.example"),
        ("BÜCHER.example", "xn--bcher-kva.example"),
        ("straße.example", "xn--strae-oqa.example"),
        ("bücher。example", "xn--bcher-kva.example"),
        ("https://proxy.example.com", "proxy.example.com"),
        ("HTTPS://Proxy.Example.com", "proxy.example.com"),
        ("  https://proxy.example.com\n", "proxy.example.com"),
        ("a.b", "a.b"),
        ("a-b.c-d.example", "a-b.c-d.example"),
        ("r3--sn-abc.example", "r3--sn-abc.example"),
        ("1.2.3.example", "1.2.3.example"),
        ("123.example", "123.example"),
        ("example.0xg", "example.0xg"),
        ("example.x1", "example.x1"),
        (label63 + ".example", label63 + ".example"),
        (name253, name253),
    ])
    func canonicalizes(_ input: String, _ expected: String) throws {
        let host = try RelayHost(input)
        #expect(host.name == expected)
        #expect(host.description == expected)
        #expect(try RelayHost(host.name) == host)
    }

    /// PROTOCOL.md §2.3 invalid vectors plus edge cases, with the expected error code.
    @Test(arguments: [
        ("localhost", IdentityError.Code.invalidHost),
        ("127.0.0.1", .ipAddressHost),
        ("127.1", .ipAddressHost),
        ("0x7f.1", .ipAddressHost),
        ("0177.0.0.1", .ipAddressHost),
        ("1.2.3", .ipAddressHost),
        ("site.example:443", .invalidHost),
        ("site..example", .invalidHost),
        ("", .invalidHost),
        ("   ", .invalidHost),
        ("https://", .invalidHost),
        ("http://proxy.example.com", .insecureScheme),
        ("HTTP://proxy.example.com", .insecureScheme),
        ("https://proxy.example.com/", .invalidHost),
        ("https://proxy.example.com:8443", .invalidHost),
        ("ftp://proxy.example.com", .invalidHost),
        ("proxy.example.com/path", .invalidHost),
        ("proxy.example.com?x", .invalidHost),
        ("proxy.example.com#x", .invalidHost),
        ("user@proxy.example.com", .invalidHost),
        ("proxy.example.com.", .invalidHost),
        ("proxy.example.com。", .invalidHost),
        (".proxy.example.com", .invalidHost),
        ("-a.example", .invalidHost),
        ("a-.example", .invalidHost),
        ("a.-example", .invalidHost),
        ("a.example-", .invalidHost),
        ("a_b.example", .invalidHost),
        ("a b.example", .invalidHost),
        ("a\u{0}b.example", .invalidHost),
        ("a\tb.example", .invalidHost),
        (label64 + ".example", .invalidHost),
        (name253 + "b", .invalidHost),
        (String(repeating: "a.", count: 600) + "a", .invalidHost),
        ("xn--zz-xxx.example", .invalidHost),
        ("xn--.example", .invalidHost),
        ("[::1]", .invalidHost),
        ("::1", .invalidHost),
        ("１２７.０.０.１", .ipAddressHost),
        ("example.0x7f", .ipAddressHost),
        ("example.0x", .ipAddressHost),
        ("EXAMPLE.0X7F", .ipAddressHost),
        ("example.123", .ipAddressHost),
        ("4294967295.0", .ipAddressHost),
    ])
    func rejects(_ input: String, _ code: IdentityError.Code) {
        let error = #expect(throws: IdentityError.self) { try RelayHost(input) }
        #expect(error?.code == code)
    }

    @Test func errorsDoNotEchoTheInput() {
        let error = #expect(throws: IdentityError.self) { try RelayHost("secret-looking_label.example") }
        #expect(error?.message.contains("secret-looking") == false)
    }
}
