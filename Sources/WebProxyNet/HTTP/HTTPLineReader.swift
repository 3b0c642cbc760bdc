/// Takes CRLF-terminated lines off a `ByteQueue`, strictly: a bare LF or a CR inside a line
/// is an error. Remembers how far it has scanned so byte-by-byte input stays linear.
struct HTTPLineReader: Sendable {
    private var scanned = 0

    /// The next complete line without its CRLF, or nil until one has arrived. A line whose
    /// length with CRLF would exceed `limit` throws `tooLong`.
    mutating func takeLine(from queue: inout ByteQueue, limit: Int, tooLong: HTTPError)
        throws(HTTPError) -> ArraySlice<UInt8>?
    {
        let readable = queue.readable
        guard let lf = readable[(readable.startIndex + scanned)...].firstIndex(of: HTTPSyntax.lf)
        else {
            scanned = readable.count
            if readable.count >= limit { throw tooLong }
            return nil
        }
        let lineLength = lf - readable.startIndex + 1
        if lineLength > limit { throw tooLong }
        guard lf > readable.startIndex, readable[lf - 1] == HTTPSyntax.cr else { throw .bareLineFeed }
        let content = readable[readable.startIndex..<(lf - 1)]
        if content.contains(HTTPSyntax.cr) { throw .bareCarriageReturn }
        queue.skip(lineLength)
        scanned = 0
        return content
    }
}
