import Foundation
import WebProxyCore
import WebProxyNet

/// A command-line mistake, reported with the usage text (never with a secret).
struct TestRelayUsageError: Error, CustomStringConvertible {
    let description: String
}

/// The options of `webproxyd-testrelay`, parsed and checked.
struct TestRelayOptions {
    static let usage = """
        USAGE: webproxyd-testrelay --backend IP:PORT --secret-file FILE --state-dir DIR
                                   [--listen IP:PORT] [--carrier MODE] [--host NAME]

        Runs the test relay over TLS with one profile until SIGTERM or SIGINT. Creates a test CA
        and a certificate for --host, writes the CA to DIR/ca.pem, and prints `PORT <n>` (the
        bound port) as the first line on standard output.

        OPTIONS:
          --listen IP:PORT     Where to listen (default 127.0.0.1:0, a free port).
          --backend IP:PORT    Where every stream is dialed (the MTProxy server).
          --secret-file FILE   A file holding the secret (hex, optionally dd-prefixed, or base64).
          --carrier MODE       https, https-lanes, websocket or websocket-lanes (default https).
          --host NAME          The relay's public hostname (default proxy.example.com).
          --state-dir DIR      Where ca.pem is written (created if missing).
        """

    var listen = SocketAddress.loopbackIPv4(port: 0)
    var backend: SocketAddress
    var secret: ProxySecret
    var carrier = CarrierMode.https
    var host: RelayHost
    var stateDirectory: String

    /// Parses `arguments` (without the program name); reads the secret file.
    init(arguments: [String]) throws(TestRelayUsageError) {
        var values: [String: String] = [:]
        var remaining = arguments[...]
        let known = ["--listen", "--backend", "--secret-file", "--carrier", "--host", "--state-dir"]
        while let name = remaining.popFirst() {
            guard known.contains(name) else {
                throw TestRelayUsageError(description: "unknown option '\(name)'")
            }
            guard let value = remaining.popFirst() else {
                throw TestRelayUsageError(description: "\(name) needs a value")
            }
            guard values.updateValue(value, forKey: name) == nil else {
                throw TestRelayUsageError(description: "\(name) is given twice")
            }
        }
        func required(_ name: String) throws(TestRelayUsageError) -> String {
            guard let value = values[name] else {
                throw TestRelayUsageError(description: "\(name) is required")
            }
            return value
        }

        if let text = values["--listen"] { listen = try Self.address(text, option: "--listen") }
        backend = try Self.address(try required("--backend"), option: "--backend")
        secret = try Self.readSecret(path: try required("--secret-file"))
        if let text = values["--carrier"] {
            guard let mode = CarrierMode(rawValue: text) else {
                throw TestRelayUsageError(description: "--carrier: unknown carrier '\(text)'")
            }
            carrier = mode
        }
        let hostText = values["--host"] ?? "proxy.example.com"
        do { host = try RelayHost(hostText) } catch {
            throw TestRelayUsageError(description: "--host: \(error)")
        }
        stateDirectory = try required("--state-dir")
    }

    /// Parses `IP:PORT` or `[IPv6]:PORT`.
    private static func address(_ text: String, option: String) throws(TestRelayUsageError) -> SocketAddress {
        guard let colon = text.lastIndex(of: ":"), let port = UInt16(text[text.index(after: colon)...])
        else {
            throw TestRelayUsageError(description: "\(option): expected IP:PORT, got '\(text)'")
        }
        var ip = text[..<colon]
        if ip.hasPrefix("["), ip.hasSuffix("]") { ip = ip.dropFirst().dropLast() }
        guard let address = SocketAddress(ipAddress: String(ip), port: port) else {
            throw TestRelayUsageError(description: "\(option): '\(ip)' is not an IP address")
        }
        return address
    }

    /// Reads the secret; errors name the file, never its content.
    private static func readSecret(path: String) throws(TestRelayUsageError) -> ProxySecret {
        let text: String
        do { text = try String(contentsOfFile: path, encoding: .utf8) } catch {
            throw TestRelayUsageError(description: "--secret-file: cannot read \(path)")
        }
        do {
            return try ProxySecret(parsing: text.trimmingCharacters(in: .whitespacesAndNewlines))
        } catch {
            throw TestRelayUsageError(description: "--secret-file: \(path) holds no valid secret")
        }
    }
}
