/// Bytes in one contiguous buffer, consumed from the front: what a parser has received but
/// not parsed (HTTP, WebSocket), and the plaintext TLS has not encrypted yet (contiguous,
/// so that small writes queued behind a slow socket are encrypted together into full
/// records). A TCP socket's unsent bytes are a `SendQueue` instead.
///
/// Consumed bytes are dropped lazily: the storage is adopted outright when the queue is
/// empty, compacted only when the consumed prefix is at least half of it (so appending and
/// consuming stay linear overall and handed-out slices never force a copy per read), and
/// released as soon as everything was consumed, so an idle connection holds no buffer.
struct ByteQueue: Sendable {
    private(set) var storage: [UInt8] = []
    private(set) var readIndex = 0

    /// Number of bytes not yet consumed.
    var count: Int { storage.count - readIndex }
    var isEmpty: Bool { readIndex == storage.count }

    /// The unconsumed bytes.
    var readable: ArraySlice<UInt8> { storage[readIndex...] }

    /// Appends `bytes`, adopting the array outright when the queue is empty (no copy).
    mutating func append(_ bytes: [UInt8]) {
        guard isEmpty else { return append(bytes[...]) }
        storage = bytes
        readIndex = 0
    }

    /// Appends a copy of `bytes` (a slice, or a buffer a read lends).
    mutating func append(_ bytes: some Collection<UInt8>) {
        if isEmpty && storage.capacity < bytes.count {
            storage = Array(bytes)
            readIndex = 0
        } else {
            compactIfWorthwhile()
            storage.append(contentsOf: bytes)
        }
    }

    /// Makes room for `extra` more bytes, so that appends of up to that many in all do not
    /// grow (copy) the storage; the room goes with the storage once everything is consumed.
    mutating func reserveCapacity(_ extra: Int) {
        if isEmpty { removeAll() }
        storage.reserveCapacity(storage.count + extra)
    }

    /// The byte `offset` positions past the read index; the caller checks `offset < count`.
    subscript(offset offset: Int) -> UInt8 { storage[readIndex + offset] }

    /// Returns the next `length` bytes (`length <= count`) and consumes them.
    mutating func take(_ length: Int) -> ArraySlice<UInt8> {
        let slice = storage[readIndex..<readIndex + length]
        skip(length)
        return slice
    }

    /// Consumes the next `length` bytes (`length <= count`).
    mutating func skip(_ length: Int) {
        readIndex += length
        if readIndex == storage.count { removeAll() }
    }

    /// Calls `body` with up to `maximum` bytes from the front, without consuming them;
    /// returns what it returns (say, how many of them a socket or an encryptor took).
    func withFront<R, E: Error>(_ maximum: Int, _ body: (UnsafeRawBufferPointer) throws(E) -> R) throws(E) -> R {
        let end = readIndex + min(count, maximum)
        let outcome = storage.withUnsafeBytes { raw in
            Result { () throws(E) in try body(UnsafeRawBufferPointer(rebasing: raw[readIndex..<end])) }
        }
        return try outcome.get()
    }

    /// Hands every unconsumed byte over (after a protocol switch) and empties the queue.
    mutating func takeAll() -> [UInt8] {
        let rest = Array(readable)
        removeAll()
        return rest
    }

    /// Drops every byte and the storage.
    mutating func removeAll() {
        storage = []
        readIndex = 0
    }

    private mutating func compactIfWorthwhile() {
        if readIndex > 0 && readIndex >= storage.count / 2 {
            storage.removeSubrange(0..<readIndex)
            readIndex = 0
        }
    }
}
