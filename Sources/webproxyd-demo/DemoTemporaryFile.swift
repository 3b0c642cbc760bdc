#if canImport(Glibc)
import Glibc
#endif
import WebProxyTestRelay

/// A file in /tmp with fresh, private contents (the demo's CA certificate for the daemon).
struct DemoTemporaryFile {
    let path: String

    init(contents: String) throws(DemoFailure) {
        var template = Array("/tmp/webproxyd-demo-ca-XXXXXX.pem".utf8CString)
        let fd = template.withUnsafeMutableBufferPointer { buffer in
            buffer.baseAddress.map { mkstemps($0, 4) } ?? -1
        }
        guard fd >= 0 else { throw DemoFailure("cannot create a temporary file in /tmp (errno \(errno))") }
        path = String(decoding: template.dropLast().map { UInt8(bitPattern: $0) }, as: UTF8.self)
        var bytes = Array(contents.utf8)[...]
        while !bytes.isEmpty {
            let written = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
            if written < 0 && errno == EINTR { continue }
            guard written > 0 else {
                let error = errno
                close(fd)
                unlink(path)
                throw DemoFailure("cannot write \(path) (errno \(error))")
            }
            bytes = bytes.dropFirst(written)
        }
        close(fd)
    }

    func remove() { unlink(path) }
}
