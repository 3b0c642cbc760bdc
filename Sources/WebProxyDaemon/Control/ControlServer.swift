#if canImport(Glibc)
import Glibc
#endif
import Foundation

/// The daemon's control socket: a unix stream socket (mode 0600) answering one request
/// line, `status`, with one JSON document, then closing.
///
/// It runs on a thread of its own, because `EventLoop` watches only the sockets of
/// `WebProxyNet` and those are IP sockets. The thread never touches relay state: `answer`
/// asks the loop for it (`execute`) and waits a bounded time. Clients are served one at a
/// time; each has `clientDeadline` in all to send its line (at most `maxRequestBytes`) and
/// take the answer, so a stuck client delays the next one by at most that.
final class ControlServer: @unchecked Sendable {
    /// The longest request line accepted.
    static let maxRequestBytes = 256
    /// How long one client may take, from accept to the last byte of the answer.
    static let clientDeadline = Duration.seconds(2)

    /// Where the socket is.
    let path: String
    private let listenFD: Int32
    /// Written once to wake the thread for `stop()`.
    private let wakeRead: Int32
    private let wakeWrite: Int32
    private let answer: @Sendable (String) -> [UInt8]
    private let finished = DispatchSemaphore(value: 0)

    private init(path: String, listenFD: Int32, wake: (Int32, Int32), answer: @escaping @Sendable (String) -> [UInt8]) {
        self.path = path
        self.listenFD = listenFD
        (wakeRead, wakeWrite) = wake
        self.answer = answer
    }

    /// Creates the socket at `path` (its directory too, mode 0700, if missing) and starts
    /// serving. A stale socket left by a crashed daemon is replaced; a socket another daemon
    /// answers on is not. `answer` maps a request line to the bytes to send back.
    static func start(path: String, answer: @escaping @Sendable (String) -> [UInt8]) throws(ControlSocketError)
        -> ControlServer
    {
        guard let address = UnixSocketAddress(path: path), path.hasPrefix("/") else {
            throw ControlSocketError("the control socket path \(path) is not an absolute path of at most 107 bytes")
        }
        try prepare(address)
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
        guard fd >= 0 else { throw ControlSocketError("cannot create the control socket: \(describeErrno())") }
        // Nobody can connect before listen(2), so tightening the mode after bind(2) is safe.
        guard address.withSockaddr({ bind(fd, $0, $1) }) == 0 else {
            let message = "cannot create the control socket \(path): \(describeErrno())"
            close(fd)
            throw ControlSocketError(message)
        }
        guard chmod(path, 0o600) == 0, listen(fd, 8) == 0 else {
            let message = "cannot set up the control socket \(path): \(describeErrno())"
            close(fd)
            unlink(path)
            throw ControlSocketError(message)
        }
        var ends: [Int32] = [-1, -1]
        guard pipe(&ends) == 0, fcntl(ends[0], F_SETFD, FD_CLOEXEC) == 0, fcntl(ends[1], F_SETFD, FD_CLOEXEC) == 0
        else {
            close(fd)
            unlink(path)
            throw ControlSocketError("cannot set up the control socket: \(describeErrno())")
        }
        let server = ControlServer(path: path, listenFD: fd, wake: (ends[0], ends[1]), answer: answer)
        Thread.detachNewThread { server.serve() }
        return server
    }

    /// Asks the thread to stop; it removes the socket and exits. Never blocks: callable on
    /// the loop thread, which the thread may be waiting for.
    func stop() {
        var byte: UInt8 = 1
        _ = write(wakeWrite, &byte, 1)
    }

    /// Waits until the thread has exited and the socket is gone. Call off the loop thread.
    func waitUntilStopped() {
        finished.wait()
        finished.signal()
    }

    // MARK: The thread

    private func serve() {
        defer {
            unlink(path)
            close(listenFD)
            close(wakeRead)
            close(wakeWrite)
            finished.signal()
        }
        while true {
            var watched = [pollfd(fd: listenFD, events: Int16(POLLIN), revents: 0), pollfd(fd: wakeRead, events: Int16(POLLIN), revents: 0)]
            guard poll(&watched, 2, -1) >= 0 || errno == EINTR else { return }
            if watched[1].revents != 0 { return }
            guard watched[0].revents != 0 else { continue }
            let client = accept(listenFD, nil, nil)
            guard client >= 0 else { continue }
            // The daemon never execs, so setting the flags after accept(2) leaks nothing.
            _ = fcntl(client, F_SETFD, FD_CLOEXEC)
            _ = fcntl(client, F_SETFL, O_NONBLOCK)
            serve(client)
            close(client)
        }
    }

    private func serve(_ client: Int32) {
        let deadline = ContinuousClock.now + Self.clientDeadline
        var request: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: Self.maxRequestBytes)
        var reply: ArraySlice<UInt8>?
        while !request.contains(UInt8(ascii: "\n")) {
            guard request.count < Self.maxRequestBytes else {
                reply = ControlAnswer.error("the request line is longer than \(Self.maxRequestBytes) bytes")[...]
                break
            }
            guard wait(client, for: Int16(POLLIN), until: deadline) else { return }
            let count = buffer.withUnsafeMutableBytes { recv(client, $0.baseAddress, Self.maxRequestBytes - request.count, 0) }
            if count == 0 { break }
            if count < 0 {
                if errno == EINTR || errno == EAGAIN { continue }
                return
            }
            request += buffer[..<count]
        }
        let line = request.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false).first ?? []
        let text = String(decoding: line, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        var remaining = reply ?? answer(text)[...]
        while !remaining.isEmpty, wait(client, for: Int16(POLLOUT), until: deadline) {
            let sent = remaining.withUnsafeBytes { send(client, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if sent < 0 {
                if errno == EINTR || errno == EAGAIN { continue }
                return
            }
            remaining = remaining.dropFirst(sent)
        }
    }

    /// Waits until `fd` is ready for `events` or `deadline` passes.
    private func wait(_ fd: Int32, for events: Int16, until deadline: ContinuousClock.Instant) -> Bool {
        while true {
            let left = ContinuousClock.now.duration(to: deadline)
            guard left > .zero else { return false }
            let milliseconds = Int32(max(1, left.components.seconds * 1000 + left.components.attoseconds / 1_000_000_000_000_000))
            var watched = pollfd(fd: fd, events: events, revents: 0)
            let ready = poll(&watched, 1, milliseconds)
            if ready > 0 { return true }
            if ready < 0 && errno != EINTR { return false }
        }
    }

    // MARK: Creating the socket

    /// Makes the directory if it is missing (0700) and removes a stale socket at the path.
    private static func prepare(_ address: UnixSocketAddress) throws(ControlSocketError) {
        let path = address.path
        let directory = String(path[..<(path.lastIndex(of: "/") ?? path.startIndex)])
        if !directory.isEmpty, mkdir(directory, 0o700) != 0, errno != EEXIST {
            throw ControlSocketError("cannot create the directory \(directory) for the control socket: \(describeErrno())")
        }
        var status = stat()
        guard lstat(path, &status) == 0 else { return }
        guard status.st_mode & S_IFMT == S_IFSOCK else {
            throw ControlSocketError("\(path) exists and is not a socket; remove it or choose another --control-socket")
        }
        if let fd = address.connect(timeoutSeconds: 1) {
            close(fd)
            throw ControlSocketError("another webproxyd answers on \(path); stop it or choose another --control-socket")
        }
        unlink(path)
    }
}

/// The control socket cannot be created.
public struct ControlSocketError: Error, Sendable, CustomStringConvertible {
    public let description: String
    init(_ description: String) { self.description = description }
}

/// The text of the current errno.
func describeErrno() -> String {
    String(cString: strerror(errno))
}
