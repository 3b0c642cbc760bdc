// Fuzz target: ProxyLink(parsing:) on arbitrary text (the whole input, decoded as UTF-8 with
// replacement).
// Invariants: a parsed link renders in both forms and re-parses equal; rendering is
// canonical (parse(render(x)) renders the same); no description, debug description or
// mirror of the link shows its secret; error messages never echo the secret= value.
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
    var dumped = ""
    dump(link, to: &dumped)
    for shown in [link.description, String(reflecting: link), "\(link)", dumped] {
        invariant(!shown.contains(link.secret.hex), "a description shows the secret")
        invariant(!shown.contains(link.secret.basePathLinkValue), "a description shows the secret")
    }
    return 0
}

/// Error messages may quote structure, never the secret parameter's value.
private func checkErrorHidesSecret(_ error: IdentityError, input: String) {
    for piece in input.split(whereSeparator: { $0 == "&" || $0 == "?" })
    where piece.hasPrefix("secret=") {
        let value = piece.dropFirst("secret=".count)
        guard looksLikeSecret(value) else { continue }
        invariant(!error.description.contains(value), "error message echoes the secret value")
    }
}
