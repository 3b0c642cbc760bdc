/// Bytes received but not yet parsed, shared by the HTTP and WebSocket parsers.
///
/// Consumed bytes are dropped lazily: the storage is replaced outright when fully consumed
/// and compacted only when the consumed prefix is at least half of it, so appending and
/// consuming stay linear overall and handed-out slices never force a full copy per read.
struct ByteQueue: Sendable {
    private(set) var storage: [UInt8] = []
    private(set) var readIndex = 0

    /// Number of bytes not yet consumed.
    var count: Int { storage.count - readIndex }
    var isEmpty: Bool { readIndex == storage.count }

    /// The unconsumed bytes.
    var readable: ArraySlice<UInt8> { storage[readIndex...] }

    mutating func append(_ bytes: [UInt8]) {
        if isEmpty {
            storage = bytes
            readIndex = 0
        } else {
            compactIfWorthwhile()
            storage.append(contentsOf: bytes)
        }
    }

    mutating func append(_ bytes: ArraySlice<UInt8>) {
        if isEmpty {
            storage = Array(bytes)
            readIndex = 0
        } else {
            compactIfWorthwhile()
            storage.append(contentsOf: bytes)
        }
    }

    mutating func append(_ bytes: UnsafeRawBufferPointer) {
        if isEmpty {
            storage = Array(bytes)
            readIndex = 0
        } else {
            compactIfWorthwhile()
            storage.append(contentsOf: bytes)
        }
    }

    /// The byte `offset` positions past the read index; the caller checks `offset < count`.
    subscript(offset offset: Int) -> UInt8 { storage[readIndex + offset] }

    /// Returns the next `length` bytes (`length <= count`) and consumes them.
    mutating func take(_ length: Int) -> ArraySlice<UInt8> {
        let slice = storage[readIndex..<readIndex + length]
        readIndex += length
        return slice
    }

    mutating func skip(_ length: Int) {
        readIndex += length
    }

    /// Hands every unconsumed byte over (after a protocol switch) and empties the queue.
    mutating func takeAll() -> [UInt8] {
        let rest = Array(readable)
        storage = []
        readIndex = 0
        return rest
    }

    private mutating func compactIfWorthwhile() {
        if readIndex > 0 && readIndex >= storage.count / 2 {
            storage.removeSubrange(0..<readIndex)
            readIndex = 0
        }
    }
}
