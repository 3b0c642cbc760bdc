// Fuzz target: ProxyLink(parsing:) on arbitrary text (the whole input, decoded as UTF-8 with
// replacement).
// Invariants: a parsed link renders in both forms and re-parses equal; rendering is
// canonical (parse(render(x)) renders the same); no description, debug description or
// mirror of the link depends on its secret; error messages never echo the secret= value.
import WebProxyCore

@_cdecl("LLVMFuzzerTestOneInput")
public func proxyLinkFuzz(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    var input = FuzzInput(data, size)
    let text = String(decoding: input.rest(), as: UTF8.self)
    let link: ProxyLink
    do throws(IdentityError) {
        link = try ProxyLink(parsing: text)
    } catch {
        checkErrorHidesSecret(error, input: text)
        return 0
    }
    for form in ProxyLink.Form.allCases {
        let rendered = link.rendered(form)
        do throws(IdentityError) {
            let reparsed = try ProxyLink(parsing: rendered)
            invariant(reparsed == link, "rendered link re-parses to a different link")
            invariant(reparsed.rendered(form) == rendered, "rendering is not canonical")
        } catch {
            invariant(false, "rendered link does not parse: \(error.code)")
        }
    }
    // A host or path may spell the secret (the input chose it), so "shows the secret" is
    // checked as "depends on the secret": the same link with other secret bytes must be
    // described identically.
    var otherBytes = link.secret.bytes
    for index in otherBytes.indices where !(link.secret.isPadded && index == 0) {
        otherBytes[index] ^= 0x5A
    }
    guard let otherSecret = try? ProxySecret(bytes: otherBytes) else {
        invariant(false, "a secret with other bytes of the same shape is refused")
        return 0
    }
    let other = ProxyLink(host: link.host, basePath: link.basePath, secret: otherSecret)
    invariant(descriptions(of: link) == descriptions(of: other), "a description shows the secret")
    return 0
}

private func descriptions(of link: ProxyLink) -> [String] {
    var dumped = ""
    dump(link, to: &dumped)
    return [link.description, String(reflecting: link), "\(link)", dumped]
}

/// Error messages may quote structure, never the secret parameter's value.
private func checkErrorHidesSecret(_ error: IdentityError, input: String) {
    for piece in input.split(whereSeparator: { $0 == "&" || $0 == "?" })
    where piece.hasPrefix("secret=") {
        let value = piece.dropFirst("secret=".count)
        // A value the input also spells elsewhere (say as the host) may be quoted for that.
        guard looksLikeSecret(value), input.ranges(of: value).count == 1 else {
            continue
        }
        invariant(!error.description.contains(value), "error message echoes the secret value")
    }
}
