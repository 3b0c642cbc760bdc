#if canImport(Glibc)
import Glibc
#endif
import Synchronization
import WebProxyTestSupport

/// A TCP proxy between the daemon and the test relay that injects network faults into the
/// ciphertext, as a hostile network would: resets (all at once, or each connection after
/// some bytes), silent outages, freezes, refusals, delay and throttling. One thread polls every socket; the test thread changes the mode.
///
/// Backpressure is kept: at most `chunk` bytes wait per direction, so a stalled side stops
/// the other's reads and the kernel buffers fill as on a real path.
final class FaultProxy: Sendable {
    enum Mode: Sendable, Equatable {
        /// Forward everything.
        case pass
        /// Every connection open now, and every one accepted while this lasts, goes silent
        /// for good: no byte, no FIN, no RST, as when a NAT entry or a Wi-Fi path is lost.
        /// Connections accepted after it are forwarded again.
        case silentOutage
        /// Nothing moves while this lasts; then everything resumes where it stopped.
        case freeze
        /// New connections are accepted and reset at once; the current ones are reset as the
        /// mode starts.
        case refuse
        /// Each direction's bytes are held this long before they are forwarded.
        case delay(Duration)
        /// Each direction of each connection forwards at most this many bytes per second.
        case throttle(bytesPerSecond: Int)
        /// Every connection is reset once this many bytes passed it, both ways together:
        /// with a small count, inside its TLS handshake or its first request.
        case resetAfter(bytes: Int)
    }

    let port: UInt16
    private let shared = Shared()
    private let thread: BackgroundWork<Bool>

    /// What the test thread and the proxy thread share.
    fileprivate final class Shared: Sendable {
        let state = Mutex(State())
    }

    fileprivate struct State: Sendable {
        var mode = Mode.pass
        var stopping = false
        /// Reset every connection open now, once.
        var resetAllPending = false
        var accepted = 0
        var resets = 0
    }

    /// A proxy on a free loopback port forwarding to `127.0.0.1:upstreamPort`.
    init(upstreamPort: UInt16) throws {
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard listener >= 0, let port = bindLoopback(listener, listeningWith: 512) else {
            if listener >= 0 { close(listener) }
            throw FaultProxyError("cannot listen on loopback")
        }
        self.port = port
        thread = BackgroundWork { [shared] in
            var loop = ProxyLoop(listener: listener, upstreamPort: upstreamPort)
            loop.run(shared)
            return true
        }
    }

    var mode: Mode {
        get { shared.state.withLock { $0.mode } }
        set { shared.state.withLock { $0.mode = newValue } }
    }

    /// Resets every connection open now (RST to both sides), once.
    func resetAll() { shared.state.withLock { $0.resetAllPending = true } }

    /// Connections accepted so far.
    var acceptedCount: Int { shared.state.withLock { $0.accepted } }
    /// Connections reset so far (by `resetAll`, `refuse` or `resetAfter`).
    var resetCount: Int { shared.state.withLock { $0.resets } }

    /// Stops the thread and closes every socket.
    func stop() {
        shared.state.withLock { $0.stopping = true }
        _ = thread.wait(within: .seconds(10))
    }
}

struct FaultProxyError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// The proxy thread's sockets; owned by that thread alone.
private struct ProxyLoop {
    /// One direction of a connection: bytes read from `from`, waiting to be written to `to`.
    struct Direction {
        var pending: [(bytes: [UInt8], due: ContinuousClock.Instant)] = []
        var pendingCount = 0
        /// Throttle: bytes forwarded in the current one-second window, and when it began.
        var windowStart = ContinuousClock.now
        var windowBytes = 0
        var readClosed = false
    }

    struct Pair {
        let client: Int32
        /// -1 for a connection accepted during a silent outage (it is never forwarded).
        let upstream: Int32
        var up = Direction()
        var down = Direction()
        var silent = false
        /// Bytes forwarded both ways.
        var forwarded = 0
    }

    static let chunk = 64 << 10
    let listener: Int32
    let upstreamPort: UInt16
    var pairs: [Pair] = []
    let clock = ContinuousClock()

    init(listener: Int32, upstreamPort: UInt16) {
        self.listener = listener
        self.upstreamPort = upstreamPort
    }

    mutating func run(_ shared: FaultProxy.Shared) {
        var buffer = [UInt8](repeating: 0, count: Self.chunk)
        while true {
            let (mode, stopping, resetAll) = shared.state.withLock { s in
                let taken = (s.mode, s.stopping, s.resetAllPending)
                s.resetAllPending = false
                return taken
            }
            if stopping { break }
            if resetAll || mode == .refuse {
                let count = pairs.filter { !$0.silent || resetAll }.count
                for index in pairs.indices.reversed() where !pairs[index].silent || resetAll {
                    reset(pairs.remove(at: index))
                }
                if count > 0 { shared.state.withLock { $0.resets += count } }
            }
            if mode == .silentOutage {
                for index in pairs.indices { pairs[index].silent = true }
            }
            acceptAll(mode: mode, shared: shared)
            pollOnce(mode: mode, buffer: &buffer)
            if case .resetAfter(let limit) = mode {
                let spent = pairs.indices.reversed().filter { !pairs[$0].silent && pairs[$0].forwarded >= limit }
                for index in spent { reset(pairs.remove(at: index)) }
                if !spent.isEmpty { shared.state.withLock { $0.resets += spent.count } }
            }
        }
        for pair in pairs { closePair(pair) }
        close(listener)
    }

    private mutating func acceptAll(mode: FaultProxy.Mode, shared: FaultProxy.Shared) {
        while true {
            let client = accept(listener, nil, nil)
            guard client >= 0 else { return }
            _ = fcntl(client, F_SETFL, fcntl(client, F_GETFL) | O_NONBLOCK)
            shared.state.withLock { $0.accepted += 1 }
            switch mode {
            case .refuse:
                Self.resetSocket(client)
                shared.state.withLock { $0.resets += 1 }
                continue
            case .silentOutage:
                pairs.append(Pair(client: client, upstream: -1, silent: true))
                continue
            default:
                break
            }
            let upstream = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = upstreamPort.bigEndian
            address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
            let connected = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    connect(upstream, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
            guard upstream >= 0, connected == 0 else {
                if upstream >= 0 { close(upstream) }
                Self.resetSocket(client)
                continue
            }
            _ = fcntl(upstream, F_SETFL, fcntl(upstream, F_GETFL) | O_NONBLOCK)
            pairs.append(Pair(client: client, upstream: upstream))
        }
    }

    /// One poll round: reads what may be read, writes what is due, drops finished pairs.
    private mutating func pollOnce(mode: FaultProxy.Mode, buffer: inout [UInt8]) {
        let frozen = mode == .freeze
        let now = clock.now
        var fds = [pollfd(fd: listener, events: Int16(POLLIN), revents: 0)]
        for pair in pairs {
            // A silent connection is watched only for its peer closing (POLLRDHUP), never read.
            let rdhup = Int16(0x2000)
            if pair.silent {
                fds.append(pollfd(fd: pair.client, events: rdhup, revents: 0))
                fds.append(pollfd(fd: -1, events: 0, revents: 0))
                continue
            }
            var clientEvents: Int16 = 0, upstreamEvents: Int16 = 0
            if !frozen {
                if pair.up.pendingCount < Self.chunk && !pair.up.readClosed { clientEvents |= Int16(POLLIN) }
                if pair.down.pendingCount < Self.chunk && !pair.down.readClosed { upstreamEvents |= Int16(POLLIN) }
                if pair.down.pending.first.map({ $0.due <= now }) == true { clientEvents |= Int16(POLLOUT) }
                if pair.up.pending.first.map({ $0.due <= now }) == true { upstreamEvents |= Int16(POLLOUT) }
            }
            fds.append(pollfd(fd: pair.client, events: clientEvents, revents: 0))
            fds.append(pollfd(fd: pair.upstream, events: upstreamEvents, revents: 0))
        }
        _ = poll(&fds, nfds_t(fds.count), 5)
        var finished: [Int] = []
        for index in pairs.indices {
            let client = fds[1 + 2 * index], upstream = fds[2 + 2 * index]
            if pairs[index].silent {
                if client.revents != 0 { finished.append(index) }
                continue
            }
            if frozen { continue }
            var alive = true
            if client.revents & Int16(POLLIN | POLLHUP | POLLERR) != 0 {
                alive = read(into: &pairs[index].up, from: pairs[index].client, mode: mode, buffer: &buffer) && alive
            }
            if upstream.revents & Int16(POLLIN | POLLHUP | POLLERR) != 0 {
                alive = read(into: &pairs[index].down, from: pairs[index].upstream, mode: mode, buffer: &buffer) && alive
            }
            let sentUp = write(&pairs[index].up, to: pairs[index].upstream, mode: mode)
            let sentDown = write(&pairs[index].down, to: pairs[index].client, mode: mode)
            guard let sentUp, let sentDown, alive else {
                finished.append(index)
                continue
            }
            pairs[index].forwarded += sentUp + sentDown
            // A side that ended and has nothing left to deliver: pass its end on.
            if pairs[index].up.readClosed && pairs[index].up.pending.isEmpty { shutdown(pairs[index].upstream, Int32(SHUT_WR)) }
            if pairs[index].down.readClosed && pairs[index].down.pending.isEmpty { shutdown(pairs[index].client, Int32(SHUT_WR)) }
            if pairs[index].up.readClosed && pairs[index].down.readClosed
                && pairs[index].up.pending.isEmpty && pairs[index].down.pending.isEmpty
            {
                finished.append(index)
            }
        }
        for index in finished.reversed() { closePair(pairs.remove(at: index)) }
    }

    /// Reads one chunk; false when the socket failed (reset).
    private func read(into direction: inout Direction, from fd: Int32, mode: FaultProxy.Mode, buffer: inout [UInt8]) -> Bool {
        let count = buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, Self.chunk) }
        if count == 0 {
            direction.readClosed = true
            return true
        }
        guard count > 0 else { return errno == EAGAIN || errno == EINTR }
        var due = clock.now
        if case .delay(let delay) = mode { due = due + delay }
        direction.pending.append((Array(buffer[..<count]), due))
        direction.pendingCount += count
        return true
    }

    /// Writes what is due (within the throttle); the bytes written, or nil when the socket failed.
    private func write(_ direction: inout Direction, to fd: Int32, mode: FaultProxy.Mode) -> Int? {
        var written = 0
        while let first = direction.pending.first, first.due <= clock.now {
            var allowed = first.bytes.count
            if case .throttle(let rate) = mode {
                if clock.now - direction.windowStart >= .seconds(1) {
                    direction.windowStart = clock.now
                    direction.windowBytes = 0
                }
                allowed = min(allowed, max(0, rate - direction.windowBytes))
                guard allowed > 0 else { break }
            }
            let count = first.bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, allowed, Int32(MSG_NOSIGNAL)) }
            if count < 0 { return errno == EAGAIN || errno == EINTR ? written : nil }
            written += count
            direction.windowBytes += count
            direction.pendingCount -= count
            if count == first.bytes.count {
                direction.pending.removeFirst()
            } else {
                direction.pending[0].bytes.removeFirst(count)
                break
            }
        }
        return written
    }

    private func reset(_ pair: Pair) {
        Self.resetSocket(pair.client)
        if pair.upstream >= 0 { Self.resetSocket(pair.upstream) }
    }

    private func closePair(_ pair: Pair) {
        close(pair.client)
        if pair.upstream >= 0 { close(pair.upstream) }
    }

    /// Closes with an RST: linger on, timeout zero.
    static func resetSocket(_ fd: Int32) {
        var linger = Glibc.linger(l_onoff: 1, l_linger: 0)
        _ = setsockopt(fd, SOL_SOCKET, SO_LINGER, &linger, socklen_t(MemoryLayout<Glibc.linger>.size))
        close(fd)
    }
}
