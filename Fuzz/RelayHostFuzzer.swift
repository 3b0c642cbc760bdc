// Fuzz target: RelayHost(_:) (IDNA via libidn2) on arbitrary text.
// Invariants: the canonical name is 1...253 bytes of lowercase letters, digits, hyphens and
// dots with at least two labels of at most 63 bytes; canonicalising it again (bare or with
// https://) gives the same name.
import WebProxyCore

@_cdecl("LLVMFuzzerTestOneInput")
public func relayHostFuzz(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    var input = FuzzInput(data, size)
    let text = String(decoding: input.rest(), as: UTF8.self)
    guard let host = try? RelayHost(text) else { return 0 }
    let name = Array(host.name.utf8)
    invariant((1...253).contains(name.count), "name of \(name.count) bytes")
    invariant(
        name.allSatisfy {
            (0x61...0x7A).contains($0) || (0x30...0x39).contains($0) || $0 == 0x2D || $0 == 0x2E
        },
        "name has bytes outside [a-z0-9.-]")
    let labels = name.split(separator: 0x2E, omittingEmptySubsequences: false)
    invariant(labels.count >= 2, "single-label name")
    invariant(labels.allSatisfy { (1...63).contains($0.count) }, "empty or long label")
    invariant((try? RelayHost(host.name)) == host, "canonical name is not a fixed point")
    invariant((try? RelayHost("https://" + host.name)) == host, "https:// prefix changes the name")
    invariant(host.description == host.name, "description differs from the name")
    return 0
}
