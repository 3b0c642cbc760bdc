import Testing
@testable import WebProxyDaemon

@Suite struct ConfigurationValueTests {
    @Test(arguments: [
        ("127.0.0.1:8443", "127.0.0.1:8443", true),
        ("127.255.0.9:1", "127.255.0.9:1", true),
        ("[::1]:8443", "[::1]:8443", true),
        ("[0:0:0:0:0:0:0:1]:80", "[::1]:80", true),
        ("[::ffff:127.0.0.2]:80", "[::ffff:127.0.0.2]:80", true),
        ("0.0.0.0:443", "0.0.0.0:443", false),
        ("[2001:db8::1]:65535", "[2001:db8::1]:65535", false),
    ])
    func listenAddresses(text: String, canonical: String, loopback: Bool) throws {
        let address = try ListenAddress(parsing: text)
        #expect(address.description == canonical)
        #expect(address.isLoopback == loopback)
    }

    @Test(arguments: ["127.0.0.1", "127.0.0.1:0", "127.0.0.1:+80", ":80", "[::1:80", "[::1]80",
                      "[127.0.0.1]:80", "localhost:80", "127.1:80", "127.0.0.1:080000"])
    func badListenAddresses(text: String) {
        #expect(throws: ConfigurationValueError.self) { try ListenAddress(parsing: text) }
    }

    @Test func wildcardsConflictWithEveryAddressOnTheirPort() throws {
        let any = try ListenAddress(parsing: "0.0.0.0:8443")
        let loopback = try ListenAddress(parsing: "127.0.0.1:8443")
        #expect(any.conflicts(with: loopback) && loopback.conflicts(with: any))
        #expect(!loopback.conflicts(with: try ListenAddress(parsing: "127.0.0.2:8443")))
        #expect(!loopback.conflicts(with: try ListenAddress(parsing: "127.0.0.1:8444")))
    }

    @Test(arguments: [
        ("Relay.Example.NET:443", "relay.example.net:443", false),
        ("localhost:8443", "localhost:8443", false),
        ("192.0.2.1:443", "192.0.2.1:443", false),
        ("[2001:DB8::1]:443", "[2001:db8::1]:443", true),
    ])
    func hostAndPort(text: String, canonical: String, ipv6: Bool) throws {
        let target = try HostAndPort(parsing: text)
        #expect(target.description == canonical)
        #expect(target.isIPv6 == ipv6)
    }

    @Test(arguments: ["relay..example:443", "-relay.example:443", "relay example:443", "[relay]:443", "relay:0"])
    func badHostAndPort(text: String) {
        #expect(throws: ConfigurationValueError.self) { try HostAndPort(parsing: text) }
    }

    @Test func pinsAcceptBothAlphabetsWithOrWithoutPadding() throws {
        let padded = try SPKIPin(parsing: "ypeBEsobvcr6wjGzmiPcTaeG7/gUfE5yuYB3ha/uSLs=")
        #expect(try SPKIPin(parsing: "ypeBEsobvcr6wjGzmiPcTaeG7_gUfE5yuYB3ha_uSLs") == padded)
        #expect(padded.bytes.first == 0xCA && padded.bytes.count == 32)
        #expect(padded.description == "ypeBEsobvcr6wjGzmiPcTaeG7/gUfE5yuYB3ha/uSLs=")
        for bad in ["ypeBEsobvcr6wjGzmiPcTaeG7/gUfE5yuYB3ha/uSLt=", "ypeB Esobvcr6wjGzmiPcTaeG7/gUfE5yuYB3ha/uSL=", "===="] {
            #expect(throws: ConfigurationValueError.self) { try SPKIPin(parsing: bad) }
        }
    }

    @Test func proxiesParseAndHideTheirPassword() throws {
        let socks = try UpstreamProxy(parsing: "SOCKS5://127.0.0.1:1080/")
        #expect(socks.kind == .socks5 && socks.credentials == nil)
        #expect(socks.description == "socks5://127.0.0.1:1080")
        let http = try UpstreamProxy(parsing: "http://a%3Ab:p@ss:w@rd@[::1]:3128")
        #expect(http.kind == .http)
        #expect(http.credentials == UpstreamProxy.Credentials(user: "a:b", password: "p@ss:w@rd"))
        #expect(http.address.description == "[::1]:3128")
        #expect(http.description == "http://a%3Ab:<redacted>@[::1]:3128")
        #expect(String(reflecting: http) == http.description)
        #expect(http != (try UpstreamProxy(parsing: "http://a%3Ab:other@[::1]:3128")))
        for bad in ["127.0.0.1:1080", "ftp://h:1", "http://h:1/path", "http://:p@h:1", "http://u:%zz@h:1"] {
            #expect(throws: ConfigurationValueError.self) { try UpstreamProxy(parsing: bad) }
        }
    }
}
