import Glibc
import Testing
import WebProxyTestSupport
@testable import WebProxyNet

@Suite struct ResolverTests {
    @Test func localhostResolvesOnTheWorkerAndCompletesOnTheLoop() async throws {
        let resolver = try Resolver()
        defer { resolver.shutdown() }
        try await withLoop { loop in
            let result: Result<[SocketAddress], NetError> = try await onLoop(loop) { done in
                _ = resolver.resolve(host: "localhost", port: 8443, on: loop) { result in
                    #expect(loop.inEventLoop)
                    done(result)
                }
            }
            let addresses = try result.get()
            #expect(!addresses.isEmpty)
            #expect(addresses.allSatisfy { $0.port == 8443 })
            #expect(addresses.contains(.loopbackIPv4(port: 8443)) || addresses.contains(.loopbackIPv6(port: 8443)))
            #expect(Set(addresses).count == addresses.count)
        }
    }

    @Test func ipLiteralsNeedNoLookup() async throws {
        let resolver = try Resolver()
        resolver.shutdown()  // a literal must not even reach the worker
        try await withLoop { loop in
            let result: Result<[SocketAddress], NetError> = try await onLoop(loop) { done in
                _ = resolver.resolve(host: "::1", port: 443, on: loop, completion: done)
            }
            #expect(try result.get() == [.loopbackIPv6(port: 443)])
        }
    }

    @Test func unknownNamesFailWithAResolutionError() async throws {
        let resolver = try Resolver()
        defer { resolver.shutdown() }
        try await withLoop { loop in
            let result: Result<[SocketAddress], NetError> = try await onLoop(loop) { done in
                _ = resolver.resolve(host: "no-such-host.invalid", port: 443, on: loop, completion: done)
            }
            let error = try #require(result.failure)
            #expect(error.code == .resolution || error.code == .syscall)
            #expect(error.call == "getaddrinfo")
            #expect(!error.description.contains("no-such-host"))
        }
    }

    @Test func cancelledRequestsDropTheirResult() async throws {
        let resolver = try Resolver()
        defer { resolver.shutdown() }
        try await withLoop { loop in
            let firstRan: Bool = try await onLoop(loop) { done in
                var firstRan = false
                let first = resolver.resolve(host: "localhost", port: 1, on: loop) { _ in firstRan = true }
                first.cancel()
                // One worker, FIFO: the second result is posted after the first one.
                _ = resolver.resolve(host: "localhost", port: 2, on: loop) { _ in
                    loop.scheduleTimer(after: .zero) { done(firstRan) }
                }
            }
            #expect(!firstRan)
        }
    }

    @Test func requestsAfterShutdownFailAsCancelled() async throws {
        let resolver = try Resolver()
        resolver.shutdown()
        try await withLoop { loop in
            let result: Result<[SocketAddress], NetError> = try await onLoop(loop) { done in
                _ = resolver.resolve(host: "localhost", port: 1, on: loop, completion: done)
            }
            #expect(result.failure?.code == .cancelled)
        }
    }
}
