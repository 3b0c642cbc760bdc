// Fuzz target: JSONValue(parsing:) and StatusDocument(decoding:) on arbitrary bytes (the
// answer `webproxyd status` reads from the control socket). The two files are compiled into
// this binary (scripts/fuzz), so the daemon's other sources are not needed.
// Invariants: what the reader accepts, the writer writes back as text the reader reads to the
// same value; an accepted status document encodes to a document that decodes to itself.
@_cdecl("LLVMFuzzerTestOneInput")
public func statusDocumentFuzz(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    var input = FuzzInput(data, size)
    let bytes = Array(input.rest())
    if let value = try? JSONValue(parsing: bytes) {
        invariant((try? JSONValue(parsing: Array(value.prettyPrinted.utf8))) == value, "written value reads differently")
    }
    if let document = try? StatusDocument(decoding: bytes) {
        invariant((try? StatusDocument(decoding: document.encoded())) == document, "document does not round-trip")
    }
    return 0
}
