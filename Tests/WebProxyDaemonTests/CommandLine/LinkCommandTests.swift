#if canImport(Glibc)
import Glibc
#endif
import Testing

@testable import WebProxyDaemon

/// `webproxyd link`: the local links; with --qr, libqrencode's matrix drawn faithfully; with
/// --open, exactly the link, as one argument, handed to the xdg-open found in PATH.
@Suite struct LinkCommandTests {
    static let link = "tg://proxy?server=127.0.0.1&port=8443&secret=dd000102030405060708090a0b0c0d0e0f"
    static let configuration = """
        [relay home]
        host = proxy.example.com
        secret = dd000102030405060708090a0b0c0d0e0f
        listen = 127.0.0.1:8443

        [relay work]
        link = tg://webproxy?server=relay.example.org&secret=8561944064fc730cbfa4473562d8ec59
        listen = 127.0.0.1:9443
        """

    private func run(_ arguments: [String], environment: [String: String] = [:]) -> (status: Int32, output: String, errors: String) {
        let output = CapturedText(), errors = CapturedText()
        let status = CommandLineTool.run(
            arguments: ["link"] + arguments, output: output.sink, errors: errors.sink, environment: environment)
        return (status, output.value, errors.value)
    }

    @Test func linkPrintsTheLocalProxyLinkAndTelegramSteps() {
        let result = run(["--config", temporaryFile(named: "link.conf", Self.configuration)])
        #expect(result.status == 0)
        #expect(
            result.output == """
                [relay home]
                tg://proxy?server=127.0.0.1&port=8443&secret=dd000102030405060708090a0b0c0d0e0f

                [relay work]
                tg://proxy?server=127.0.0.1&port=9443&secret=8561944064fc730cbfa4473562d8ec59

                In Telegram Desktop, open the link above, or enter it by hand:
                  Settings → Advanced → Connection type → Use custom proxy → MTProxy,
                  with the server, port and secret of the link.

                """)
    }

    @Test func theDrawnCodeIsLibqrencodesMatrixWithAQuietZone() throws {
        let code = try #require(TerminalQRCode(Self.link))
        // Version 5 (37 modules) is the smallest that holds this link at level M in 8-bit mode.
        #expect(code.size == 37)
        let lines = code.lines(colours: false)
        let width = code.size + 2 * TerminalQRCode.quietZone
        #expect(lines.count == (width + 1) / 2)
        // Read the half blocks back into modules and compare with the matrix.
        for (lineIndex, line) in lines.enumerated() {
            let cells = Array(line)
            #expect(cells.count == width)
            for (columnIndex, cell) in cells.enumerated() {
                let row = lineIndex * 2 - TerminalQRCode.quietZone
                let column = columnIndex - TerminalQRCode.quietZone
                let top = cell == "█" || cell == "▀", bottom = cell == "█" || cell == "▄"
                #expect(top == code.isDark(row: row, column: column), "row \(row) column \(column)")
                #expect(bottom == code.isDark(row: row + 1, column: column), "row \(row + 1) column \(column)")
            }
        }
        // The three finder patterns: a dark 7×7 ring around a dark 3×3 centre.
        for (top, left) in [(0, 0), (0, code.size - 7), (code.size - 7, 0)] {
            for row in 0..<7 {
                for column in 0..<7 {
                    let ring = row == 0 || row == 6 || column == 0 || column == 6
                    let centre = (2...4).contains(row) && (2...4).contains(column)
                    #expect(code.isDark(row: top + row, column: left + column) == (ring || centre))
                }
            }
        }
        // On a terminal each line is black on white, so the code reads right on a dark theme.
        let coloured = code.lines(colours: true)
        #expect(coloured.allSatisfy { $0.hasPrefix("\u{1B}[38;5;16;48;5;231m") && $0.hasSuffix("\u{1B}[0m") })
    }

    @Test func qrPrintsEachRelaysLinkAndItsCode() throws {
        let path = temporaryFile(named: "link-qr.conf", Self.configuration)
        let result = run(["--config", path, "--relay", "home", "--qr"])
        #expect(result.status == 0, "\(result.errors)")
        let code = try #require(TerminalQRCode(Self.link))
        #expect(result.output.hasPrefix(
            "[relay home]\n\(Self.link)\n" + code.lines(colours: false).joined(separator: "\n")
                + "\n(127.0.0.1:8443 is a loopback address: only Telegram on this machine can use it)\n\n"))
        #expect(!result.output.contains("9443"))
        #expect(run(["--config", path, "--relay", "nope"]).status == 78)
    }

    @Test func openHandsTheLinkToXdgOpenAsOneArgument() throws {
        let scratch = try OperationsScratchDirectory()
        let record = scratch.adopt("arguments")
        // A stand-in xdg-open that records its arguments, one a line.
        try scratch.write("xdg-open", "#!/bin/sh\nprintf '%s\\n' \"$#\" \"$@\" > \(record)\n", mode: 0o755)
        let path = temporaryFile(named: "link-open.conf", Self.configuration)
        let result = run(["--config", path, "--relay", "home", "--open"], environment: ["PATH": scratch.path])
        #expect(result.status == 0, "\(result.errors)")
        #expect(SetupCommand.readText(record) == "1\n\(Self.link)\n")

        let failing = try OperationsScratchDirectory()
        try failing.write("xdg-open", "#!/bin/sh\nexit 4\n", mode: 0o755)
        let failed = run(["--config", path, "--relay", "home", "--open"], environment: ["PATH": failing.path])
        #expect(failed.status == 1)
        #expect(failed.errors.contains("xdg-open exited with status 4"))
        #expect(!failed.errors.contains("0a0b0c0d0e0f"))

        let missing = run(["--config", path, "--relay", "home", "--open"], environment: ["PATH": "/nonexistent"])
        #expect(missing.status == 1 && missing.errors.contains("apt-get install xdg-utils"))
        // One relay at a time: which one would Telegram add?
        #expect(run(["--config", path, "--open"], environment: ["PATH": scratch.path]).status == 64)
    }

    @Test func underSudoTheDesktopEnvironmentIsTheCallingUsers() {
        let environment = LinkCommand.desktopEnvironment(
            of: 0, from: ["PATH": "/usr/bin", "DISPLAY": ":0", "SUDO_COMMAND": "x", "CREDENTIALS_DIRECTORY": "/x"])
        #expect(environment["DISPLAY"] == ":0" && environment["PATH"] == "/usr/bin")
        #expect(environment["XDG_RUNTIME_DIR"] == "/run/user/0")
        #expect(environment["HOME"] == "/root" && environment["USER"] == "root")
        #expect(environment["SUDO_COMMAND"] == nil && environment["CREDENTIALS_DIRECTORY"] == nil)
    }
}
