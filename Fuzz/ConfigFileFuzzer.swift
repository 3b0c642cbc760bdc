// Fuzz target: DaemonConfiguration.parse on arbitrary configuration text.
// Input: [flags] [text...]; flags bit 0 marks the file readable by others (secrets in it
// become warnings). The Configuration sources are compiled into this binary (scripts/fuzz),
// so the parser runs without the rest of the daemon. Paths in the text (secret-file,
// ca-file) are really opened: that is what the daemon does, bounded by the file size limit.
// Invariants: parsing is deterministic; every diagnostic names the file and a line inside
// the text, in file order; no diagnostic or relay description repeats a secret= value, a
// link's secret or a proxy password that the input spells only once; an accepted
// configuration has at least one relay, each with at most 128 streams, and no two relays
// share a listener.

private let file = "/fuzz/webproxyd.conf"
private let environment = ["CREDENTIALS_DIRECTORY": "/nonexistent/webproxyd-fuzz"]

@_cdecl("LLVMFuzzerTestOneInput")
public func configFileFuzz(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    var input = FuzzInput(data, size)
    let readableByOthers = input.byte() & 1 == 1
    let text = String(decoding: input.rest(), as: UTF8.self)
    let outcome = parse(text, readableByOthers: readableByOthers)
    invariant(outcome == parse(text, readableByOthers: readableByOthers), "parsing is not deterministic")
    // Lines end with LF (CR LF included), counted on bytes: "\r\n" is one Character.
    let lineCount = text.utf8.count { $0 == UInt8(ascii: "\n") } + 1
    let secrets = secretSpellings(in: text)
    var shown: [String] = []
    switch outcome {
    case .failure(let error):
        invariant(!error.diagnostics.isEmpty, "a refused configuration has no diagnostic")
        check(error.diagnostics, lineCount: lineCount)
        shown = error.diagnostics.map(\.description)
    case .success(let loaded):
        let relays = loaded.configuration.relays
        invariant(!relays.isEmpty, "accepted a configuration without relays")
        for (index, relay) in relays.enumerated() {
            invariant((1...RelayConfiguration.maxStreamsLimit).contains(relay.maxStreams), "max-streams out of range")
            for other in relays[..<index] {
                invariant(!relay.listen.conflicts(with: other.listen), "two relays share a listener")
            }
            var dumped = ""
            dump(relay, to: &dumped)
            shown += [relay.description, String(reflecting: relay), dumped]
        }
        check(loaded.warnings, lineCount: lineCount)
        shown += loaded.warnings.map(\.description)
    }
    for secret in secrets where text.ranges(of: secret).count == 1 {
        invariant(!shown.contains { $0.contains(secret) }, "a diagnostic or description shows a secret")
    }
    return 0
}

/// `Equatable` stand-in for `Result`, whose failure type here is not `Error`-constrained.
private enum Outcome: Equatable {
    case success(LoadedConfiguration)
    case failure(ConfigurationError)
}

private func parse(_ text: String, readableByOthers: Bool) -> Outcome {
    do throws(ConfigurationError) {
        return .success(try DaemonConfiguration.parse(
            text, file: file, environment: environment, fileReadableByOthers: readableByOthers))
    } catch {
        return .failure(error)
    }
}

private func check(_ diagnostics: [ConfigurationDiagnostic], lineCount: Int) {
    let lines = diagnostics.map { $0.line ?? 0 }
    invariant(lines == lines.sorted(), "diagnostics are not in file order")
    for diagnostic in diagnostics {
        invariant(diagnostic.file == file, "a diagnostic names another file")
        if let line = diagnostic.line {
            invariant((1...lineCount).contains(line), "line \(line) is outside the \(lineCount)-line text")
        }
    }
}

/// Secret-looking values of `secret =` and `link =` lines (the link's secret= parameter)
/// and the passwords of `proxy =` URLs.
private func secretSpellings(in text: String) -> [String] {
    var found: [String] = []
    for line in text.split(whereSeparator: \.isNewline) {
        let parts = line.split(separator: "=", maxSplits: 1)
        guard parts.count == 2 else { continue }
        let key = parts[0].filter { !$0.isWhitespace }
        let value = parts[1].filter { !$0.isWhitespace }
        switch key {
        case "secret":
            found.append(value)
        case "link":
            for piece in value.split(whereSeparator: { $0 == "&" || $0 == "?" }) where piece.hasPrefix("secret=") {
                found.append(String(piece.dropFirst("secret=".count)))
            }
        case "proxy":
            // scheme://user:password@host:port
            guard let scheme = value.firstRange(of: "://"),
                let at = value[scheme.upperBound...].lastIndex(of: "@")
            else { continue }
            let credentials = value[scheme.upperBound..<at]
            if let colon = credentials.firstIndex(of: ":") {
                found.append(String(credentials[credentials.index(after: colon)...]))
            }
        default:
            continue
        }
    }
    return found.filter(looksLikeSecret)
}
