#if canImport(Glibc)
import Glibc
#endif
import Testing
@testable import WebProxyDaemon

@Suite struct ExampleConfigurationTests {
    /// systemd/webproxyd.conf.example in this checkout.
    static let examplePath = repositoryPath("systemd/webproxyd.conf.example")

    @Test func theShippedExampleParses() throws {
        let scratch = try OperationsScratchDirectory()
        try scratch.write("home.secret", "dd00112233445566778899aabbccddeeff\n", mode: 0o400)
        let loaded = try DaemonConfiguration.load(
            path: Self.examplePath, environment: ["CREDENTIALS_DIRECTORY": scratch.path])
        #expect(loaded.warnings.isEmpty)
        let relay = try #require(loaded.configuration.relays.first)
        #expect(loaded.configuration.relays.count == 1)
        #expect(loaded.configuration.logLevel == .info)
        #expect(loaded.configuration.metrics == nil)
        #expect(relay.name == "home")
        #expect(relay.host.name == "relay.example.com")
        #expect(relay.secret.isPadded)
        #expect(relay.listen.description == "127.0.0.1:8443")
        #expect(relay.carrier == .follow && relay.maxStreams == 128)
    }

    /// Every commented-out `#key = value` example is a key of its section, and every key
    /// the parser knows is documented.
    @Test func everyDocumentedKeyIsAKnownKey() throws {
        let text = try #require(readRepositoryFile("systemd/webproxyd.conf.example"))
        var section = ""
        for line in text.split(separator: "\n") {
            if line.hasPrefix("[") { section = String(line) }
            guard line.hasPrefix("#"), let equals = line.firstIndex(of: "="),
                  !line.dropFirst().hasPrefix(" "), !line.dropFirst().hasPrefix("[")
            else { continue }
            let key = line[line.index(after: line.startIndex)..<equals].trimmingCharacters(in: " ")
            let known = section == "[daemon]" ? ConfigurationParser.daemonKeys : ConfigurationParser.relayKeys
            #expect(known.contains(key), "\(section) documents unknown key \(key)")
        }
        let documented = Set(text.split(separator: "\n").compactMap { line -> String? in
            let body = line.hasPrefix("#") ? line.dropFirst() : line[...]
            guard let equals = body.firstIndex(of: "="), !body.hasPrefix(" ") else { return nil }
            return String(body[..<equals].trimmingCharacters(in: " "))
        })
        #expect(documented.isSuperset(of: ConfigurationParser.relayKeys))
        #expect(documented.isSuperset(of: ConfigurationParser.daemonKeys))
    }
}

/// A path in this checkout, from the repository root.
func repositoryPath(_ relative: String) -> String {
    var components = "\(#filePath)".split(separator: "/", omittingEmptySubsequences: false)
    components.removeLast(4)  // Tests/WebProxyDaemonTests/Configuration/<file>
    return components.joined(separator: "/") + "/" + relative
}

/// A text file of this checkout, read whole; nil if it cannot be read.
func readRepositoryFile(_ relative: String) -> String? {
    let fd = open(repositoryPath(relative), O_RDONLY | O_CLOEXEC)
    guard fd >= 0 else { return nil }
    defer { close(fd) }
    var bytes: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 8192)
    while true {
        let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        if count <= 0 { break }
        bytes += buffer[..<count]
    }
    return String(decoding: bytes, as: UTF8.self)
}

extension Substring {
    fileprivate func trimmingCharacters(in set: Character) -> String {
        String(drop { $0 == set }.reversed().drop { $0 == set }.reversed())
    }
}
