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
    private var listener: UnixListener?
    private let clients: OneShotClients<ControlRequestReader>

    private init(path: String, loop: EventLoop, answer: @escaping (String) -> [UInt8]) {
        self.path = path
        clients = OneShotClients(loop: loop, maxClients: Self.maxClients, deadline: Self.clientDeadline) {
            ControlRequestReader(answer: answer)
        }
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
                server.clients.accept(connection)
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
        clients.abortAll()
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

/// One control client's request line, read as it arrives: at most `maxRequestBytes` are
/// kept, and the answer is made once a newline, the bound or the client's end arrives.
private struct ControlRequestReader: OneShotRequestReader {
    let answer: (String) -> [UInt8]
    private var received: [UInt8] = []

    init(answer: @escaping (String) -> [UInt8]) {
        self.answer = answer
    }

    mutating func receive(_ bytes: UnsafeRawBufferPointer) -> [UInt8]? {
        // Never hold more than the bound: the answer needs no more.
        received += bytes.prefix(ControlServer.maxRequestBytes - received.count)
        if let newline = received.firstIndex(of: UInt8(ascii: "\n")) {
            return reply(to: received[..<newline])
        }
        guard received.count >= ControlServer.maxRequestBytes else { return nil }
        return ControlAnswer.error("the request line is longer than \(ControlServer.maxRequestBytes) bytes")
    }

    /// A client that ends without a newline asked for all that came.
    mutating func receiveEnd() -> [UInt8]? {
        reply(to: received[...])
    }

    private func reply(to line: ArraySlice<UInt8>) -> [UInt8] {
        let isSpace: (UInt8) -> Bool = { $0 == 0x20 || (0x09...0x0D).contains($0) }
        let trimmed = line.drop(while: isSpace).reversed().drop(while: isSpace).reversed()
        return answer(String(decoding: trimmed, as: UTF8.self))
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
