// Fuzz target: BridgePage.parse(html:) on arbitrary bytes (the whole input is the page).
// Invariants: the byte and String entry points agree; a parsed page has an https origin of
// at most 300 bytes and a batch limit in 1...2 MiB; its description is exactly the fixed
// redacted form (the bootstrap token never shows).
import WebProxyCore

@_cdecl("LLVMFuzzerTestOneInput")
public func bridgePageFuzz(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    var input = FuzzInput(data, size)
    let html = Array(input.rest())
    let fromBytes = Result { () throws(CarrierError) in try BridgePage.parse(html: html) }
    if let text = String(validating: html, as: UTF8.self) {
        let fromText = Result { () throws(CarrierError) in try BridgePage.parse(html: text) }
        invariant(fromText == fromBytes, "String and byte parsers disagree")
    }
    guard case .success(let page) = fromBytes else { return 0 }
    invariant(page.relayOrigin.hasPrefix("https://"), "origin is not https")
    invariant(page.relayOrigin.utf8.count <= 300, "origin longer than 300 bytes")
    invariant(
        (1...FrameLimits.defaultBatchBytes).contains(page.batchLimit),
        "batchLimit \(page.batchLimit)")
    let expected =
        "BridgePage(relayOrigin: \(page.relayOrigin), carrierMode: \(page.carrierMode), "
        + "batchLimit: \(page.batchLimit), bootstrap: redacted)"
    invariant(page.description == expected, "description is not the redacted form")
    invariant(
        String(reflecting: page.bootstrap) == "RelayToken(redacted)",
        "token debug description leaks")
    return 0
}
