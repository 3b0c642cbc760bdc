import Glibc

/// The bytes a TCP socket could not take yet, as owned chunks in the order they were
/// written.
///
/// Not a `ByteQueue`, on purpose: the kernel needs no contiguous view, so the chunks go out
/// with one vectored `sendmsg` and each is freed as soon as it was sent. Memory follows what
/// is queued (a local socket may hold up to 8 MiB for a slow client), where a contiguous
/// buffer would grow by copying and keep its largest capacity until drained. Noncopyable,
/// so its memory has one owner and is freed when the owner goes.
struct SendQueue: ~Copyable {
    private var chunks: [UnsafeMutableRawBufferPointer] = []
    private var head = 0
    private var headOffset = 0
    /// Bytes queued and not yet consumed.
    private(set) var count = 0

    init() {}

    deinit {
        for chunk in chunks[head...] { chunk.deallocate() }
    }

    var isEmpty: Bool { count == 0 }

    /// Copies `bytes` in as one chunk.
    mutating func append(_ bytes: UnsafeRawBufferPointer) {
        guard !bytes.isEmpty else { return }
        let chunk = UnsafeMutableRawBufferPointer.allocate(byteCount: bytes.count, alignment: 1)
        chunk.copyMemory(from: bytes)
        chunks.append(chunk)
        count += bytes.count
    }

    /// One `sendmsg` of up to 64 queued chunks.
    func send(_ fd: Int32) throws(NetError) -> IOResult {
        let count = min(chunks.count - head, 64)
        return try withUnsafeTemporaryAllocation(of: iovec.self, capacity: count) { vectors throws(NetError) -> IOResult in
            for index in 0..<count {
                let chunk = chunks[head + index]
                let skip = index == 0 ? headOffset : 0
                vectors[index] = iovec(iov_base: chunk.baseAddress.map { $0 + skip }, iov_len: chunk.count - skip)
            }
            return try Syscall.sendv(fd, UnsafeBufferPointer(vectors))
        }
    }

    /// Drops `sent` bytes from the front, freeing every chunk they finish.
    mutating func consume(_ sent: Int) {
        var remaining = sent
        count -= sent
        while remaining > 0 {
            let available = chunks[head].count - headOffset
            if remaining < available {
                headOffset += remaining
                return
            }
            remaining -= available
            chunks[head].deallocate()
            head += 1
            headOffset = 0
        }
        if head == chunks.count {
            chunks.removeAll(keepingCapacity: true)
            head = 0
        } else if head >= 32 && head * 2 >= chunks.count {
            chunks.removeFirst(head)
            head = 0
        }
    }

    /// Frees every chunk.
    mutating func removeAll() {
        for chunk in chunks[head...] { chunk.deallocate() }
        chunks.removeAll()
        head = 0
        headOffset = 0
        count = 0
    }
}
