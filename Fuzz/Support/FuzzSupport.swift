// Helpers compiled into every fuzz target binary (see scripts/fuzz).

/// The fuzz input, read front to back: option bytes first, then the data under test.
/// Reading past the end yields zeros and empty slices, so every input is usable.
struct FuzzInput {
    private let bytes: [UInt8]
    private var position = 0

    init(_ data: UnsafePointer<UInt8>?, _ size: Int) {
        bytes = data.map { Array(UnsafeBufferPointer(start: $0, count: size)) } ?? []
    }

    var isAtEnd: Bool { position >= bytes.count }

    /// The next byte, or 0 past the end.
    mutating func byte() -> UInt8 {
        guard position < bytes.count else { return 0 }
        defer { position += 1 }
        return bytes[position]
    }

    /// Up to `count` next bytes; the slice keeps the indices of the whole input (not zero-based).
    mutating func take(_ count: Int) -> ArraySlice<UInt8> {
        let end = min(bytes.count, position + max(0, count))
        defer { position = end }
        return bytes[position..<end]
    }

    /// Everything not read yet.
    mutating func rest() -> ArraySlice<UInt8> { take(bytes.count - position) }
}

/// Fails the run when an invariant does not hold; libFuzzer saves the input as a crash.
func invariant(
    _ condition: @autoclosure () -> Bool, _ message: @autoclosure () -> String,
    file: StaticString = #fileID, line: UInt = #line
) {
    if !condition() { fatalError("invariant violated: \(message())", file: file, line: line) }
}

extension ArraySlice<UInt8> {
    /// Splits the bytes into chunks whose sizes come from `seed`: 0 keeps one chunk, n gives
    /// pseudo-random sizes in 1...n+1 (1 feeds almost byte by byte). Deterministic.
    func chunked(seed: UInt8) -> [ArraySlice<UInt8>] {
        guard seed != 0 else { return isEmpty ? [] : [self] }
        var state = UInt32(seed) &* 0x9E37_79B1 | 1
        var chunks: [ArraySlice<UInt8>] = []
        var start = startIndex
        while start < endIndex {
            state ^= state << 13
            state ^= state >> 17
            state ^= state << 5
            let size = 1 + Int(state % (UInt32(seed) + 1))
            let end = start + Swift.min(size, endIndex - start)
            chunks.append(self[start..<end])
            start = end
        }
        return chunks
    }
}

/// Text a secret could be spelled as: 16 or more hex / base64 / base64url characters. Error
/// messages must never contain such input (shorter or other text may match their wording).
func looksLikeSecret(_ text: some StringProtocol) -> Bool {
    text.utf8.count >= 16
        && text.utf8.allSatisfy { byte in
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "+"), UInt8(ascii: "/"),
                UInt8(ascii: "="), UInt8(ascii: "_"), UInt8(ascii: "-"):
                true
            default: false
            }
        }
}
