import Testing
@testable import WebProxyDaemon

/// The man pages cannot drift from the code: webproxyd.conf(5) documents exactly the keys
/// the parser accepts, each under its section, and webproxyd(8) exactly the subcommands.
@Suite struct ManualPageTests {
    @Test func theConfigurationPageDocumentsExactlyTheParsersKeys() throws {
        let page = try #require(readRepositoryFile("Docs/man/webproxyd.conf.5"))
        let keys = Self.definedTerms(in: page)
        #expect(keys["DAEMON SECTION"] == ConfigurationParser.daemonKeys)
        #expect(keys["RELAY SECTIONS"] == ConfigurationParser.relayKeys)
    }

    @Test func theCommandPageDocumentsExactlyTheSubcommands() throws {
        let page = try #require(readRepositoryFile("Docs/man/webproxyd.8"))
        let documented = page.split(separator: "\n").filter { $0.hasPrefix(".SS ") }.map { line in
            String(line.dropFirst(4).drop { $0 == "\"" }.prefix { $0 != " " && $0 != "\"" })
        }
        // The usage text lists one subcommand a line, indented, under SUBCOMMANDS:.
        let usage = CommandLineTool.usage.split(separator: "\n")
        let listed = usage.drop { !$0.hasPrefix("SUBCOMMANDS:") }.dropFirst()
            .prefix { $0.hasPrefix("  ") }
            .map { String($0.drop { $0 == " " }.prefix { $0 != " " }) }
        #expect(!listed.isEmpty)
        #expect(documented == listed)
    }

    /// For each `.SH` section, the terms of its `.TP` / `.B term` entries, in order.
    static func definedTerms(in page: String) -> [String: [String]] {
        var terms: [String: [String]] = [:]
        var section = ""
        var afterTP = false
        for line in page.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.hasPrefix(".SH ") {
                section = line.dropFirst(4).filter { $0 != "\"" }
            } else if afterTP, line.hasPrefix(".B "), !line.dropFirst(3).contains(" ") {
                terms[section, default: []].append(String(line.dropFirst(3)))
            }
            afterTP = line == ".TP"
        }
        return terms
    }
}
