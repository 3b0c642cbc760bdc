import WebProxyNet

/// Reads one client's request for `OneShotClients` and makes its answer.
protocol OneShotRequestReader {
    /// Takes the next bytes; returns the whole answer once the request can be judged, nil
    /// while more bytes may help. Must bound what it keeps.
    mutating func receive(_ bytes: UnsafeRawBufferPointer) -> [UInt8]?
    /// The client ended its half before an answer: the answer to what came, or nil to close
    /// without one.
    mutating func receiveEnd() -> [UInt8]?
}

/// The clients of a local server that answers one request per connection and then closes:
/// the control socket and the metrics endpoint. At most `maxClients` at once (more are reset
/// at once), each reset `deadline` after it was accepted unless it is gone by then; an
/// answer is written whole and followed by a close, a refused write by a reset. What makes a
/// request and its answer is the reader's business. Every method runs on the loop thread.
final class OneShotClients<Reader: OneShotRequestReader> {
    private let loop: EventLoop
    private let maxClients: Int
    private let deadline: Duration
    private let makeReader: () -> Reader
    private var clients: [ObjectIdentifier: OneShotClient<Reader>] = [:]

    init(loop: EventLoop, maxClients: Int, deadline: Duration, makeReader: @escaping () -> Reader) {
        self.loop = loop
        self.maxClients = maxClients
        self.deadline = deadline
        self.makeReader = makeReader
    }

    /// Serves a connection the listener accepted (TCP, unix-domain, or TLS over either).
    func accept(_ stream: any ByteStream) {
        guard clients.count < maxClients else {
            stream.abort()
            return
        }
        let client = OneShotClient(stream: stream, reader: makeReader(), owner: self)
        clients[ObjectIdentifier(client)] = client
        client.deadline = loop.scheduleTimer(after: deadline) { [weak self, weak client] in
            guard let client else { return }
            client.deadline = nil
            client.stream.abort()
            self?.finished(client)
        }
        stream.delegate = client
    }

    /// Resets every client.
    func abortAll() {
        for client in clients.values {
            if let timer = client.deadline { loop.cancelTimer(timer) }
            client.stream.abort()
        }
        clients = [:]
    }

    fileprivate func finished(_ client: OneShotClient<Reader>) {
        if let timer = client.deadline { loop.cancelTimer(timer) }
        client.deadline = nil
        clients[ObjectIdentifier(client)] = nil
    }
}

/// One client's connection and its reader, until the answer is out or the deadline passed.
private final class OneShotClient<Reader: OneShotRequestReader>: ByteStreamDelegate {
    let stream: any ByteStream
    var reader: Reader
    weak var owner: OneShotClients<Reader>?
    var deadline: TimerID?
    private var answered = false

    init(stream: any ByteStream, reader: Reader, owner: OneShotClients<Reader>) {
        self.stream = stream
        self.reader = reader
        self.owner = owner
    }

    func stream(_ connection: any ByteStream, didRead bytes: UnsafeRawBufferPointer) {
        guard !answered, let answer = reader.receive(bytes) else { return }
        send(answer)
    }

    func streamDidReachEnd(_ connection: any ByteStream, clean: Bool) {
        guard !answered else { return }
        if let answer = reader.receiveEnd() {
            send(answer)
        } else {
            answered = true
            stream.close()
        }
    }

    func stream(_ connection: any ByteStream, didCloseWith error: TransportError?) {
        owner?.finished(self)
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
