import Dispatch
import Glibc
import Synchronization

/// Resolves host names with `getaddrinfo` on one dedicated worker thread (never the loop, never
/// the Swift cooperative pool) and posts the results back to the asking loop.
///
/// `@unchecked Sendable`: the pending queue and the stop flag live in a `Mutex`, and the
/// semaphore is thread-safe; nothing else is mutable.
public final class Resolver: @unchecked Sendable {
    private struct Queue {
        var requests: [ResolveRequest] = []
        var stopping = false
    }

    private let queue = Mutex(Queue())
    private let available = DispatchSemaphore(value: 0)

    /// Starts the worker thread.
    public init(name: String = "resolver") throws(NetError) {
        let thread = try Syscall.spawnThread(name: name) { [self] in work() }
        // Nobody joins the worker: it ends by itself after `shutdown()`.
        pthread_detach(thread)
    }

    /// Resolves `host` to TCP addresses for `port`, in getaddrinfo's order without duplicates.
    /// IP literals complete without a lookup. `completion` runs on `loop`, never before this
    /// returns, unless the request is cancelled first.
    public func resolve(
        host: String, port: UInt16, on loop: EventLoop,
        completion: @escaping (Result<[SocketAddress], NetError>) -> Void
    ) -> ResolveRequest {
        loop.preconditionInEventLoop()
        let request = ResolveRequest(host: host, port: port, loop: loop, completion: completion)
        if let literal = SocketAddress(ipAddress: host, port: port) {
            loop.enqueue { request.complete(.success([literal])) }
            return request
        }
        let accepted = queue.withLock { state in
            guard !state.stopping else { return false }
            state.requests.append(request)
            return true
        }
        if accepted {
            available.signal()
        } else {
            loop.enqueue {
                request.complete(.failure(NetError(.cancelled, call: "getaddrinfo", message: "resolver stopped")))
            }
        }
        return request
    }

    /// Ends the worker after its current lookup; queued requests are dropped.
    public func shutdown() {
        queue.withLock { $0.stopping = true }
        available.signal()
    }

    private func work() {
        while true {
            available.wait()
            let next: ResolveRequest?? = queue.withLock { state in
                if state.stopping { return .none }
                return state.requests.isEmpty ? .some(nil) : state.requests.removeFirst()
            }
            guard let request = next else { return }
            guard let request else { continue }
            let result = Self.lookUp(host: request.host, port: request.port)
            request.loop.execute { request.complete(result) }
        }
    }

    /// Blocking getaddrinfo for TCP addresses of either family.
    static func lookUp(host: String, port: UInt16) -> Result<[SocketAddress], NetError> {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        hints.ai_protocol = Int32(IPPROTO_TCP)
        var list: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(host, String(port), &hints, &list)
        guard status == 0 else {
            let systemErrno = errno
            if status == EAI_SYSTEM {
                return .failure(NetError.syscall("getaddrinfo", errno: systemErrno))
            }
            let text = gai_strerror(status).map { String(cString: $0) } ?? "error \(status)"
            return .failure(NetError(.resolution, call: "getaddrinfo", message: text))
        }
        defer { freeaddrinfo(list) }
        var addresses: [SocketAddress] = []
        var node = list
        while let entry = node?.pointee {
            if let raw = entry.ai_addr, let address = SocketAddress(storage: raw), !addresses.contains(address) {
                addresses.append(address)
            }
            node = entry.ai_next
        }
        guard !addresses.isEmpty else {
            return .failure(NetError(.resolution, call: "getaddrinfo", message: "no IPv4 or IPv6 address"))
        }
        return .success(addresses)
    }
}

/// One pending lookup; `cancel()` drops its result.
///
/// `@unchecked Sendable`: the worker thread reads only the immutable `host` and `port`;
/// `completion` and the cancelled state are touched only on the loop thread.
public final class ResolveRequest: @unchecked Sendable {
    let host: String
    let port: UInt16
    let loop: EventLoop
    private let completion: OnceCompletion<[SocketAddress], NetError>

    fileprivate init(
        host: String, port: UInt16, loop: EventLoop,
        completion: @escaping (Result<[SocketAddress], NetError>) -> Void
    ) {
        self.host = host
        self.port = port
        self.loop = loop
        self.completion = OnceCompletion(completion)
    }

    /// Drops the result: the completion will not run. Call on the loop thread.
    public func cancel() {
        loop.preconditionInEventLoop()
        completion.cancel()
    }

    fileprivate func complete(_ result: Result<[SocketAddress], NetError>) {
        completion.complete(result)
    }
}
