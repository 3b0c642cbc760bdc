#if canImport(Glibc)
import Glibc
#endif
import WebProxyNet

/// The daemon's control socket: a unix stream socket (mode 0600) on the daemon's event
/// loop, answering one request line, `status`, with one JSON document, then closing.
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
                server.accepted(connection)
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
            client.cancelDeadline?()
            client.tcp.abort()
        }
        clients = [:]
    }

    private func accepted(_ tcp: TCPConnection) {
        guard clients.count < Self.maxClients else {
            tcp.abort()
            return
        }
        let client = ControlConnection(tcp: tcp, server: self)
        clients[ObjectIdentifier(client)] = client
        let deadline = loop.scheduleTimer(after: Self.clientDeadline) { [weak self, weak client] in
            guard let client else { return }
            client.cancelDeadline = nil
            client.tcp.abort()
            self?.finished(client)
        }
        client.cancelDeadline = { [loop] in loop.cancelTimer(deadline) }
        tcp.delegate = client
    }

    /// Sends the answer to `request` (or a fixed error), then closes once it is out.
    fileprivate func respond(to client: ControlConnection, request: ControlRequest) {
        let reply: [UInt8]
        switch request {
        case .line(let bytes):
            let isSpace: (UInt8) -> Bool = { $0 == 0x20 || (0x09...0x0D).contains($0) }
            let trimmed = bytes.drop(while: isSpace).reversed().drop(while: isSpace).reversed()
            let text = String(decoding: trimmed, as: UTF8.self)
            reply = answer(text)
        case .tooLong:
            reply = ControlAnswer.error("the request line is longer than \(Self.maxRequestBytes) bytes")
        }
        client.tcp.pauseReading()
        do {
            try client.tcp.write(reply)
            client.tcp.close()
        } catch {
            client.tcp.abort()
        }
    }

    fileprivate func finished(_ client: ControlConnection) {
        client.cancelDeadline?()
        client.cancelDeadline = nil
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

/// What a control client asked, once its line is complete.
private enum ControlRequest {
    /// The line without its newline (all that came, if the client ended without one).
    case line(ArraySlice<UInt8>)
    /// `maxRequestBytes` arrived without a newline.
    case tooLong
}

/// One control client's connection and the request bytes it has sent so far.
private final class ControlConnection: TCPConnectionDelegate {
    let tcp: TCPConnection
    weak var server: ControlServer?
    /// Cancels the timer that resets the client when its time is up.
    var cancelDeadline: (() -> Void)?
    private var received: [UInt8] = []
    private var answered = false

    init(tcp: TCPConnection, server: ControlServer) {
        self.tcp = tcp
        self.server = server
    }

    func connection(_ connection: TCPConnection, didRead bytes: UnsafeRawBufferPointer) {
        guard !answered else { return }
        // Never hold more than the bound: the answer needs no more.
        received += bytes.prefix(ControlServer.maxRequestBytes - received.count)
        if let newline = received.firstIndex(of: UInt8(ascii: "\n")) {
            respond(.line(received[..<newline]))
        } else if received.count >= ControlServer.maxRequestBytes {
            respond(.tooLong)
        }
    }

    func connectionDidReadEOF(_ connection: TCPConnection) {
        if !answered { respond(.line(received[...])) }
    }

    func connection(_ connection: TCPConnection, didCloseWith error: NetError?) {
        server?.finished(self)
    }

    private func respond(_ request: ControlRequest) {
        answered = true
        server?.respond(to: self, request: request)
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
