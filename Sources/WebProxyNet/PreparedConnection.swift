/// A TLS connection dialled before it is needed, so that the WebSocket upgrade that takes it
/// does not wait for TCP and TLS: the websocket carriers dial one while their session is
/// being built (bridge page, creation), and the session's first upgrade takes it.
///
/// A held connection is watched while it waits. One the peer ends, or sends anything on, is
/// dropped, and so is one unused after `maxAge` (fronts close a connection that sends no
/// request within about 10 s), so what is handed over is fresh and open. Loop-confined.
public final class PreparedConnection: ByteStreamDelegate {
    private let loop: EventLoop
    private let maxAge: Duration
    private var dial: SecureDialOperation?
    private var held: TLSConnection?
    private var expiry: TimerID?
    /// Who waits for the dial under way.
    private var taker: OnceCompletion<TLSConnection, TransportError>?

    /// `maxAge`: how long a dialled connection is held for a taker before it is closed.
    public init(loop: EventLoop, maxAge: Duration = .seconds(5)) {
        self.loop = loop
        self.maxAge = maxAge
    }

    /// Whether a connection is held or being dialled.
    var isPrepared: Bool { dial != nil || held != nil }

    /// Whether a dialled connection waits for a taker (for the tests).
    var isHolding: Bool { held != nil }

    /// Dials `endpoint` unless a connection is held or being dialled already.
    public func prepare(to endpoint: SecureEndpoint, dialer: SecureDialer, resolver: Resolver) {
        loop.preconditionInEventLoop()
        guard !isPrepared else { return }
        // Held strongly until the dial ends (every stage has a deadline) or is cancelled, so
        // a taker still gets what it waits for when nobody else keeps this object.
        dial = dialer.connect(to: endpoint, on: loop, resolver: resolver) { [self] result in
            dial = nil
            let waiting = taker
            taker = nil
            if let waiting, waiting.isPending {
                waiting.complete(result)
            } else if case .success(let connection) = result {
                hold(connection)
            }
        }
    }

    /// Closes what is held and stops a dial under way; a waiting taker gets nothing.
    public func discard() {
        loop.preconditionInEventLoop()
        taker?.cancel()
        taker = nil
        dial?.cancel()
        dial = nil
        if let connection = release() { connection.abort() }
    }

    /// Hands the connection to `body`, never before this returns: the held one, or what the
    /// dial under way brings (its failure included). Nil, and `body` never runs, when nothing
    /// is prepared or another taker waits. Cancel the returned completion to stop waiting.
    func take(
        _ body: @escaping (Result<TLSConnection, TransportError>) -> Void
    ) -> OnceCompletion<TLSConnection, TransportError>? {
        loop.preconditionInEventLoop()
        let completion = OnceCompletion(discard: { $0.abort() }, body)
        if let connection = release() {
            loop.enqueue { completion.complete(.success(connection)) }
            return completion
        }
        guard dial != nil, !(taker?.isPending ?? false) else { return nil }
        taker = completion
        return completion
    }

    private func hold(_ connection: TLSConnection) {
        held = connection
        connection.delegate = self
        expiry = loop.scheduleTimer(after: maxAge) { [weak self] in
            guard let self else { return }
            expiry = nil
            release()?.close()
        }
    }

    /// Stops watching the held connection and returns it.
    private func release() -> TLSConnection? {
        guard let connection = held else { return nil }
        held = nil
        if let expiry { loop.cancelTimer(expiry) }
        expiry = nil
        connection.delegate = nil
        return connection
    }

    // MARK: ByteStreamDelegate (while held)

    /// The server speaks first only to refuse: the connection cannot carry an upgrade.
    public func stream(_ stream: any ByteStream, didRead bytes: UnsafeRawBufferPointer) {
        release()?.abort()
    }

    public func streamDidReachEnd(_ stream: any ByteStream, clean: Bool) {
        release()?.close()
    }

    public func stream(_ stream: any ByteStream, didCloseWith error: TransportError?) {
        _ = release()
    }
}
