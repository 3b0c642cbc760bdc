// Fuzz target: BasePath(_:) and BasePath.optional(_:) on arbitrary text.
// Invariants: the value is 1...128 bytes of segments `[A-Za-z0-9][A-Za-z0-9_-]*` joined by
// `/`; it is a fixed point (also with surrounding slashes); `optional` agrees with `init`
// except for blank input and a lone `/`.
import WebProxyCore

@_cdecl("LLVMFuzzerTestOneInput")
public func basePathFuzz(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    var input = FuzzInput(data, size)
    let text = String(decoding: input.rest(), as: UTF8.self)
    let path = try? BasePath(text)
    let optional = Result { () throws(IdentityError) in try BasePath.optional(text) }
    switch optional {
    case .success(nil):
        invariant(path == nil, "optional() gave nil for a valid path")
    case .success(let some?):
        invariant(some == path, "optional() and init disagree")
    case .failure:
        invariant(path == nil, "optional() failed on a valid path")
    }
    guard let path else { return 0 }
    let value = Array(path.value.utf8)
    invariant((1...128).contains(value.count), "value of \(value.count) bytes")
    for segment in value.split(separator: 0x2F, omittingEmptySubsequences: false) {
        invariant(segment.first.map(isLetterOrDigit) == true, "segment starts badly")
        invariant(
            segment.allSatisfy { isLetterOrDigit($0) || $0 == 0x5F || $0 == 0x2D },
            "bad segment byte")
    }
    invariant((try? BasePath(path.value)) == path, "value is not a fixed point")
    invariant((try? BasePath(path.pathPrefix + "/")) == path, "slashes change the path")
    return 0
}

private func isLetterOrDigit(_ byte: UInt8) -> Bool {
    (0x30...0x39).contains(byte) || (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte)
}
