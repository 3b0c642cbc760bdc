#if canImport(Glibc)
import Glibc
#endif
import WebProxyNet

/// The daemon's control socket: a unix stream socket (mode 0600) on the daemon's event
/// loop, answering one request line, `status`, with one JSON document, then closing. It
/// speaks a line, not HTTP: `webproxyd status` needs no more, and a line needs no parser.
///
/// Like every socket of the daemon it is non-blocking and owned by the loop thread, so
/// `answer` reads the relays' state directly. Each client has `clientDeadline` in all to
/// send its line (at most `maxRequestBytes`, never buffered beyond) and take the answer,
/// then it is reset; at most `maxClients` are served at once, and more are reset at once.
/// Every method runs on the loop thread.
final class ControlServer {
    /// The longest request line accepted.
    static let maxRequestBytes = 256
    /// How long one client may take, from accept to the last byte of the answer.
    static let clientDeadline = Duration.seconds(2)
    /// At most this many clients at once.
    static let maxClients = 8

    /// Where the socket is.
    let path: String
    private let loop: EventLoop
    private let answer: (String) -> [UInt8]
    private var listener: UnixListener?
    private var clients: [ObjectIdentifier: ControlConnection] = [:]

    private init(path: String, loop: EventLoop, answer: @escaping (String) -> [UInt8]) {
        self.path = path
        self.loop = loop
        self.answer = answer
    }

    /// Creates the socket at `path` (its directory too, mode 0700, if missing) and starts
    /// serving on `loop`; call on the loop thread. A stale socket left by a crashed daemon is
    /// replaced; a socket another daemon answers on is not. `answer` maps a request line to
    /// the bytes to send back.
    static func start(path: String, loop: EventLoop, answer: @escaping (String) -> [UInt8]) throws(ControlSocketError)
        -> ControlServer
    {
        guard let address = UnixSocketAddress(path: path), path.hasPrefix("/") else {
            throw ControlSocketError("the control socket path \(path) is not an absolute path of at most 107 bytes")
        }
        try prepare(address)
        let server = ControlServer(path: path, loop: loop, answer: answer)
        do {
            server.listener = try UnixListener.listen(path: path, mode: 0o600, loop: loop, backlog: 8) {
                [weak server] connection in
                guard let server else { return connection.abort() }
                server.accept(connection)
            }
        } catch {
            throw ControlSocketError("cannot create the control socket \(path): \(error.message)")
        }
        return server
    }

    /// Stops listening, removes the socket and resets every client.
    func stop() {
        listener?.close()
        listener = nil
        for client in clients.values {
            if let timer = client.deadline { loop.cancelTimer(timer) }
            client.stream.abort()
        }
        clients = [:]
    }

    // MARK: Clients

    private func accept(_ stream: any ByteStream) {
        guard clients.count < Self.maxClients else {
            stream.abort()
            return
        }
        let client = ControlConnection(stream: stream, answer: answer) { [weak self] client in
            self?.finished(client)
        }
        clients[ObjectIdentifier(client)] = client
        client.deadline = loop.scheduleTimer(after: Self.clientDeadline) { [weak self, weak client] in
            guard let client else { return }
            client.deadline = nil
            client.stream.abort()
            self?.finished(client)
        }
        stream.delegate = client
    }

    private func finished(_ client: ControlConnection) {
        if let timer = client.deadline { loop.cancelTimer(timer) }
        client.deadline = nil
        clients[ObjectIdentifier(client)] = nil
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
        if address.isAnswered() {
            throw ControlSocketError("another webproxyd answers on \(path); stop it or choose another --control-socket")
        }
        unlink(path)
    }
}

/// One control client: its request line, read as it arrives (at most `maxRequestBytes`
/// are kept), answered once a newline, the bound or the client's end arrives; the answer is
/// written whole and followed by a close, a refused write by a reset.
private final class ControlConnection: ByteStreamDelegate {
    let stream: any ByteStream
    var deadline: TimerID?
    private let answer: (String) -> [UInt8]
    private let finished: (ControlConnection) -> Void
    private var received: [UInt8] = []
    private var answered = false

    init(stream: any ByteStream, answer: @escaping (String) -> [UInt8], finished: @escaping (ControlConnection) -> Void) {
        self.stream = stream
        self.answer = answer
        self.finished = finished
    }

    func stream(_ connection: any ByteStream, didRead bytes: UnsafeRawBufferPointer) {
        guard !answered else { return }
        // Never hold more than the bound: the answer needs no more.
        received += bytes.prefix(ControlServer.maxRequestBytes - received.count)
        if let newline = received.firstIndex(of: UInt8(ascii: "\n")) {
            send(reply(to: received[..<newline]))
        } else if received.count >= ControlServer.maxRequestBytes {
            send(ControlAnswer.error("the request line is longer than \(ControlServer.maxRequestBytes) bytes"))
        }
    }

    /// A client that ends without a newline asked for all that came.
    func streamDidReachEnd(_ connection: any ByteStream, clean: Bool) {
        guard !answered else { return }
        send(reply(to: received[...]))
    }

    func stream(_ connection: any ByteStream, didCloseWith error: TransportError?) {
        finished(self)
    }

    private func reply(to line: ArraySlice<UInt8>) -> [UInt8] {
        let isSpace: (UInt8) -> Bool = { $0 == 0x20 || (0x09...0x0D).contains($0) }
        let trimmed = line.drop(while: isSpace).reversed().drop(while: isSpace).reversed()
        return answer(String(decoding: trimmed, as: UTF8.self))
    }

    private func send(_ answer: [UInt8]) {
        answered = true
        stream.pauseReading()
        do {
            try stream.write(answer)
            stream.close()
        } catch {
            stream.abort()
        }
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
