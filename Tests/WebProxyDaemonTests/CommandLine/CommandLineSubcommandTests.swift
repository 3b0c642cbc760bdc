import Testing

@testable import WebProxyDaemon

/// Golden tests of the subcommands: help texts, `check-config` diagnostics
/// and exit statuses (64 usage, 78 configuration).
@Suite struct CommandLineSubcommandTests {
    private func run(_ arguments: [String]) -> (status: Int32, output: String, errors: String) {
        let out = Capture(), err = Capture()
        let status = CommandLineTool.run(arguments: arguments, output: out.sink, errors: err.sink, environment: [:])
        return (status, out.value, err.value)
    }

    @Test func eachSubcommandHasHelp() {
        let expected: [String: String] = [
            "run": CommandLineTool.runHelp, "check-config": CommandLineTool.checkConfigHelp,
            "link": LinkCommand.help, "setup": SetupCommand.help, "version": CommandLineTool.versionHelp,
        ]
        for (command, help) in expected {
            let result = run([command, "--help"])
            #expect(result.status == 0)
            #expect(result.output == help + "\n")
            #expect(result.errors.isEmpty)
        }
        #expect(CommandLineTool.versionHelp == "USAGE: webproxyd version\n\nPrint the version and exit.")
        #expect(CommandLineTool.checkConfigHelp.hasPrefix("USAGE: webproxyd check-config [--config FILE]\n"))
        #expect(LinkCommand.help.hasPrefix("USAGE: webproxyd link [--config FILE] [--relay NAME] [--qr] [--open]\n"))
        #expect(
            CommandLineTool.runHelp.hasPrefix(
                """
                USAGE: webproxyd run [--config FILE]
                       webproxyd run --link LINK --listen HOST:PORT [--ca-file PEM] [--connect-to HOST:PORT]

                """))
        for command in ["setup", "run", "check-config", "link"] { #expect(CommandLineTool.usage.contains("  \(command) ")) }
    }

    @Test func checkConfigReportsEveryErrorAndExits78() {
        let path = temporaryFile(
            named: "bad.conf",
            """
            [relay home]
            host = proxy.example.com
            secret = 000102030405060708090a0b0c0d0e0f
            listen = 127.0.0.1:8443
            cafile = /etc/ssl/x.pem
            """)
        let result = run(["check-config", "--config", path])
        #expect(result.status == 78)
        #expect(result.output.isEmpty)
        #expect(result.errors == "\(path):5: error: Unknown key 'cafile' in [relay home] (did you mean 'ca-file'?)\n")
        #expect(!result.errors.contains("000102030405060708090a0b0c0d0e0f"))
    }

    /// A `ca-file` that is no PEM bundle fails `check-config` as it would fail `run`: once,
    /// on its line, exit 78; `run` with the same file or flag stops before starting.
    @Test func aCAFileThatIsNotPEMFailsCheckConfigOnce() {
        let ca = temporaryFile(named: "not-pem.pem", "this is not a certificate\n")
        let path = temporaryFile(
            named: "bad-ca.conf",
            "[relay home]\nlink = tg://webproxy?server=proxy.example.com&secret=000102030405060708090a0b0c0d0e0f\nlisten = 127.0.0.1:8443\nca-file = \(ca)\n")
        for arguments in [["check-config", "--config", path], ["run", "--config", path]] {
            let result = run(arguments)
            #expect(result.status == 78, "\(arguments[0])")
            #expect(result.errors.hasPrefix("\(path):4: error: \(ca) holds no usable PEM CA certificate"), "\(result.errors)")
            #expect(result.errors.split(separator: "\n").count == 1, "\(result.errors)")
        }
        let quick = run(["run", "--link", "tg://webproxy?server=proxy.example.com&secret=000102030405060708090a0b0c0d0e0f",
                         "--listen", "127.0.0.1:1", "--ca-file", ca])
        #expect(quick.status == 78)
        #expect(quick.errors.hasPrefix("command line: error: --ca-file: \(ca) holds no usable PEM CA certificate"), "\(quick.errors)")
    }

    @Test func checkConfigAcceptsAGoodFile() {
        let path = temporaryFile(
            named: "good.conf",
            "[relay home]\nlink = tg://webproxy?server=proxy.example.com&secret=000102030405060708090a0b0c0d0e0f\nlisten = 127.0.0.1:8443\n")
        let result = run(["check-config", "--config", path])
        #expect(result.status == 0)
        #expect(result.output == "\(path): OK, 1 relay\n")
    }

    @Test func missingFileIsAConfigurationError() {
        let result = run(["check-config", "--config", "/nonexistent/webproxyd.conf"])
        #expect(result.status == 78)
        #expect(result.errors.hasPrefix("/nonexistent/webproxyd.conf: error: "))
        #expect(run(["link", "--config", "/nonexistent/webproxyd.conf"]).status == 78)
        #expect(run(["run", "--config", "/nonexistent/webproxyd.conf"]).status == 78)
    }

    @Test func badQuickFlagsAreConfigurationErrors() {
        let result = run(["run", "--link", "http://nope", "--listen", "0.0.0.0:1"])
        #expect(result.status == 78)
        #expect(result.errors.contains("command line: error: --link: "))
        #expect(result.errors.contains("command line: error: --listen: "))
    }

    @Test(arguments: [
        ["run", "--bogus"], ["run", "--config"], ["run", "--link", "x"], ["run", "--listen", "127.0.0.1:1"],
        ["run", "--config", "a", "--link", "b", "--listen", "c"], ["check-config", "extra"],
        ["link", "--config", "a", "--config", "b"], ["check-config", "--link", "x"],
    ])
    func usageErrorsExit64(arguments: [String]) {
        let result = run(arguments)
        #expect(result.status == 64)
        #expect(result.output.isEmpty)
        #expect(result.errors.hasPrefix("webproxyd \(arguments[0]): "))
        #expect(result.errors.contains("USAGE: webproxyd \(arguments[0])"))
    }

    /// A link typed without `--link` is a usage error that does not print the link back
    /// (under systemd, standard error goes to the journal).
    @Test(arguments: ["run", "check", "check-config", "link", "status"])
    func aStrayLinkIsNotEchoed(command: String) {
        let secret = "8561944064fc730cbfa4473562d8ec59"
        let result = run([command, "tg://webproxy?server=relay.example.org&secret=\(secret)"])
        #expect(result.status == 64)
        #expect(result.errors.hasPrefix("webproxyd \(command): unexpected argument (not shown: it may hold a secret)"))
        #expect(!result.errors.contains(secret))
    }

    @Test func anUnknownSubcommandIsEchoedOnlyWhenItIsAWord() {
        let typo = run(["rnu"])
        #expect(typo.status == 64)
        #expect(typo.errors.hasPrefix("webproxyd: unknown subcommand 'rnu'\n"))
        let link = run(["tg://webproxy?server=relay.example.org&secret=8561944064fc730cbfa4473562d8ec59"])
        #expect(link.status == 64)
        #expect(link.errors.hasPrefix("webproxyd: unknown subcommand (not shown: it may hold a secret)\n"))
    }
}
