import Glibc
import Testing
import WebProxyTestSupport
@testable import WebProxyNet

@Suite struct HappyEyeballsTests {
    let v6a = SocketAddress(ipAddress: "2001:db8::1", port: 443)!
    let v6b = SocketAddress(ipAddress: "2001:db8::2", port: 443)!
    let v4a = SocketAddress(ipAddress: "192.0.2.1", port: 443)!
    let v4b = SocketAddress(ipAddress: "192.0.2.2", port: 443)!
    let refused = NetError.syscall("connect", errno: ECONNREFUSED)

    func at(_ milliseconds: UInt64) -> MonotonicTime {
        MonotonicTime(nanoseconds: 1_000_000_000 + milliseconds * 1_000_000)
    }

    @Test func interleavesFamiliesStartingWithIPv6() {
        let machine = HappyEyeballs(addresses: [v4a, v4b, v6a, v6b], timeout: .seconds(5))
        #expect(machine.attemptOrder == [v6a, v4a, v6b, v4b])
        #expect(HappyEyeballs(addresses: [v4a, v4b], timeout: .seconds(5)).attemptOrder == [v4a, v4b])
    }

    @Test func nextFamilyStartsAfterTheAttemptDelayAndTheFirstSuccessWins() {
        var machine = HappyEyeballs(addresses: [v4a, v6a], timeout: .seconds(5))
        #expect(machine.start(now: at(0)) == [.startAttempt(index: 0, address: v6a)])
        #expect(machine.nextTimerDeadline == at(250))
        #expect(machine.timerFired(now: at(249)) == [])
        #expect(machine.timerFired(now: at(250)) == [.startAttempt(index: 1, address: v4a)])
        #expect(machine.nextTimerDeadline == at(5_000))
        #expect(machine.attemptSucceeded(1, now: at(260)) == [.cancelAttempt(index: 0), .succeeded(index: 1)])
        #expect(machine.nextTimerDeadline == nil)
        // Late reports change nothing.
        #expect(machine.attemptSucceeded(0, now: at(270)) == [])
        #expect(machine.attemptFailed(0, error: refused, now: at(270)) == [])
        #expect(machine.timerFired(now: at(6_000)) == [])
    }

    @Test func aFailureStartsTheNextAddressAtOnce() {
        var machine = HappyEyeballs(addresses: [v6a, v4a], timeout: .seconds(5))
        _ = machine.start(now: at(0))
        #expect(machine.attemptFailed(0, error: refused, now: at(3)) == [.startAttempt(index: 1, address: v4a)])
        #expect(machine.nextTimerDeadline == at(5_000))
        #expect(machine.attemptSucceeded(1, now: at(4)) == [.succeeded(index: 1)])
    }

    @Test func failsWithTheLastErrorWhenEveryAttemptFails() {
        var machine = HappyEyeballs(addresses: [v6a, v4a, v6b], timeout: .seconds(5))
        _ = machine.start(now: at(0))
        #expect(machine.timerFired(now: at(250)) == [.startAttempt(index: 1, address: v4a)])
        #expect(machine.timerFired(now: at(500)) == [.startAttempt(index: 2, address: v6b)])
        #expect(machine.nextTimerDeadline == at(5_000))
        #expect(machine.attemptFailed(1, error: refused, now: at(600)) == [])
        #expect(machine.attemptFailed(2, error: refused, now: at(700)) == [])
        let unreachable = NetError.syscall("connect", errno: ENETUNREACH)
        #expect(machine.attemptFailed(0, error: unreachable, now: at(800)) == [.failed(unreachable)])
        #expect(machine.nextTimerDeadline == nil)
    }

    @Test func theOverallDeadlineCancelsWhatIsInFlight() {
        var machine = HappyEyeballs(addresses: [v6a, v4a], attemptDelay: .milliseconds(250), timeout: .milliseconds(400))
        _ = machine.start(now: at(0))
        _ = machine.timerFired(now: at(250))
        let actions = machine.timerFired(now: at(400))
        #expect(
            actions == [
                .cancelAttempt(index: 0), .cancelAttempt(index: 1),
                .failed(NetError(.timedOut, call: "connect", message: "connect timed out")),
            ])
    }

    @Test func noAddressesFailAtOnce() {
        var machine = HappyEyeballs(addresses: [], timeout: .seconds(1))
        let actions = machine.start(now: at(0))
        #expect(actions.count == 1)
        guard case .failed(let error) = actions.first else {
            Issue.record("expected a failure")
            return
        }
        #expect(error.code == .resolution)
    }

    @Test func loopbackFallsBackFromARefusedFamily() async throws {
        try await withLoop { loop in
            let winner: Result<SocketAddress, NetError> = try await onLoop(loop) { done in
                // Only 127.0.0.1:P listens; [::1]:P (or 127.0.0.2 when IPv6 is absent) refuses.
                let listener = try startEchoServer(on: .loopbackIPv4(port: 0), loop: loop)
                let port = listener.localAddress.port
                let loser =
                    hasIPv6Loopback
                    ? SocketAddress.loopbackIPv6(port: port) : SocketAddress(ipAddress: "127.0.0.2", port: port)!
                _ = HappyEyeballsConnector.connect(
                    to: [listener.localAddress, loser], on: loop, timeout: .seconds(5)
                ) { result in
                    done(result.map { connection in
                        connection.close()
                        return connection.remoteAddress
                    })
                }
            }
            #expect(try winner.get().family == .ipv4)
            #expect(try winner.get().ipAddress == "127.0.0.1")
        }
    }

    @Test func loopbackReportsTheLastErrorWhenNothingListens() async throws {
        try await withLoop { loop in
            let result: Result<SocketAddress, NetError> = try await onLoop(loop) { done in
                let listener = try TCPListener.listen(on: .loopbackIPv4(port: 0), loop: loop) { _ in }
                let address = listener.localAddress
                listener.close()
                _ = HappyEyeballsConnector.connect(to: [address, address], on: loop, timeout: .seconds(5)) {
                    done($0.map(\.remoteAddress))
                }
            }
            #expect(result.failure?.errno == ECONNREFUSED)
        }
    }
}
