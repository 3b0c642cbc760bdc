import Testing
import WebProxyCore
import WebProxyNet

@testable import WebProxyDaemon
@testable import WebProxySession

@Suite struct PrometheusTextTests {
    static func snapshot(
        name: String, state: RelayStatusEntry.State, counters: RelayCounters, frames: FrameCounts = FrameCounts(),
        queued: QueuedBytes = QueuedBytes(), tlsConnections: TLSConnectionCounts = TLSConnectionCounts(),
        sideSessions: [RelayStatusEntry.SideSession] = []
    ) -> RelaySnapshot {
        RelaySnapshot(
            status: RelayStatusEntry(
                name: name, listen: "127.0.0.1:8443", state: state, carrier: state == .up ? "https" : nil, streams: 3,
                refusedConnections: 2, bytesUp: 100, bytesDown: 2000, sessionsEstablished: counters.sessionsEstablished,
                reconnects: counters.reconnects, lastError: nil, sideSessions: sideSessions),
            counters: counters, frames: frames, queued: queued, tlsConnections: tlsConnections)
    }

    @Test func exactExposition() {
        var home = RelayCounters()
        home.sessionsEstablished = 2
        home.reconnects = 1
        home.recordFailure(SessionFailure(.unreachable, "x"), monotonic: .seconds(1), wallClockSeconds: 0)
        home.recordFailure(SessionFailure(.carrierLost, "y"), monotonic: .seconds(2), wallClockSeconds: 0)
        home.recordFailure(SessionFailure(.unreachable, "z"), monotonic: .seconds(3), wallClockSeconds: 0)
        home.localCloses = ["relay-closed": 5, "session-failed": 2]
        home.recordRequest(carrier: nil, duration: .milliseconds(40))
        home.recordRequest(carrier: nil, duration: .milliseconds(300))
        home.recordRequest(carrier: .https, duration: .seconds(25))
        home.recordRequest(carrier: .https, duration: .seconds(31))
        let work = RelayCounters()
        var queued = QueuedBytes()
        queued.observe(uplink: 300, downlink: 4000, largestStream: 4000)
        queued.observe(uplink: 0, downlink: 65536, largestStream: 65536)
        let text = PrometheusText.render(
            version: "1.2.3",
            relays: [
                Self.snapshot(
                    name: "home", state: .up, counters: home, frames: FrameCounts(sent: 7, received: 12), queued: queued,
                    tlsConnections: TLSConnectionCounts(http: 3, httpResumed: 2, http2: 1, webSocket: 1, webSocketResumed: 1, open: 2),
                    sideSessions: [.init(role: "media", state: .up, streams: 1), .init(role: "transfer", state: .down, streams: 0)]),
                Self.snapshot(name: "work", state: .down, counters: work),
            ])
        #expect(
            text == """
                # HELP webproxyd_build_info The running webproxyd version.
                # TYPE webproxyd_build_info gauge
                webproxyd_build_info{version="1.2.3"} 1
                # HELP webproxyd_sessions_established_total Relay sessions that came up.
                # TYPE webproxyd_sessions_established_total counter
                webproxyd_sessions_established_total{relay="home"} 2
                webproxyd_sessions_established_total{relay="work"} 0
                # HELP webproxyd_session_up 1 while a relay session is up.
                # TYPE webproxyd_session_up gauge
                webproxyd_session_up{relay="home"} 1
                webproxyd_session_up{relay="work"} 0
                # HELP webproxyd_side_session_up 1 while a relay's media or transfer session is up (listed once started).
                # TYPE webproxyd_side_session_up gauge
                webproxyd_side_session_up{relay="home",role="media"} 1
                webproxyd_side_session_up{relay="home",role="transfer"} 0
                # HELP webproxyd_streams Local connections open now.
                # TYPE webproxyd_streams gauge
                webproxyd_streams{relay="home"} 3
                webproxyd_streams{relay="work"} 3
                # HELP webproxyd_connections_refused_total Local connections closed without reaching the relay (stream limit or no session in time).
                # TYPE webproxyd_connections_refused_total counter
                webproxyd_connections_refused_total{relay="home"} 2
                webproxyd_connections_refused_total{relay="work"} 2
                # HELP webproxyd_reconnects_total Session builds started after a failure or a lost session.
                # TYPE webproxyd_reconnects_total counter
                webproxyd_reconnects_total{relay="home"} 1
                webproxyd_reconnects_total{relay="work"} 0
                # HELP webproxyd_bytes_total Payload bytes carried: up from local clients, down to them.
                # TYPE webproxyd_bytes_total counter
                webproxyd_bytes_total{relay="home",direction="up"} 100
                webproxyd_bytes_total{relay="home",direction="down"} 2000
                webproxyd_bytes_total{relay="work",direction="up"} 100
                webproxyd_bytes_total{relay="work",direction="down"} 2000
                # HELP webproxyd_frames_total Relay protocol frames: up (sent to the relay) and down (received).
                # TYPE webproxyd_frames_total counter
                webproxyd_frames_total{relay="home",direction="up"} 7
                webproxyd_frames_total{relay="home",direction="down"} 12
                webproxyd_frames_total{relay="work",direction="up"} 0
                webproxyd_frames_total{relay="work",direction="down"} 0
                # HELP webproxyd_queued_bytes Bytes held for the relay's streams: up (read, not yet sent) and down (received, not yet written).
                # TYPE webproxyd_queued_bytes gauge
                webproxyd_queued_bytes{relay="home",direction="up"} 0
                webproxyd_queued_bytes{relay="home",direction="down"} 65536
                webproxyd_queued_bytes{relay="work",direction="up"} 0
                webproxyd_queued_bytes{relay="work",direction="down"} 0
                # HELP webproxyd_queued_bytes_peak The most bytes one session of the relay held at once since the relay started.
                # TYPE webproxyd_queued_bytes_peak gauge
                webproxyd_queued_bytes_peak{relay="home"} 65536
                webproxyd_queued_bytes_peak{relay="work"} 0
                # HELP webproxyd_local_closes_total Local connections the daemon closed, by reason.
                # TYPE webproxyd_local_closes_total counter
                webproxyd_local_closes_total{relay="home",reason="relay-closed"} 5
                webproxyd_local_closes_total{relay="home",reason="session-failed"} 2
                # HELP webproxyd_errors_total Session failures by class.
                # TYPE webproxyd_errors_total counter
                webproxyd_errors_total{relay="home",class="carrier-lost"} 1
                webproxyd_errors_total{relay="home",class="unreachable"} 2
                # HELP webproxyd_tls_connections_total TLS connections to the relay with a completed handshake, by use, and whether they resumed a session.
                # TYPE webproxyd_tls_connections_total counter
                webproxyd_tls_connections_total{relay="home",use="http",resumed="yes"} 2
                webproxyd_tls_connections_total{relay="home",use="http",resumed="no"} 1
                webproxyd_tls_connections_total{relay="home",use="websocket",resumed="yes"} 1
                webproxyd_tls_connections_total{relay="home",use="websocket",resumed="no"} 0
                webproxyd_tls_connections_total{relay="work",use="http",resumed="yes"} 0
                webproxyd_tls_connections_total{relay="work",use="http",resumed="no"} 0
                webproxyd_tls_connections_total{relay="work",use="websocket",resumed="yes"} 0
                webproxyd_tls_connections_total{relay="work",use="websocket",resumed="no"} 0
                # HELP webproxyd_http2_connections_total HTTP connections to the relay that negotiated h2 (of use="http").
                # TYPE webproxyd_http2_connections_total counter
                webproxyd_http2_connections_total{relay="home"} 1
                webproxyd_http2_connections_total{relay="work"} 0
                # HELP webproxyd_tls_connections_open TLS connections to the relay open now (HTTP, busy or idle, and WebSockets).
                # TYPE webproxyd_tls_connections_open gauge
                webproxyd_tls_connections_open{relay="home"} 2
                webproxyd_tls_connections_open{relay="work"} 0
                # HELP webproxyd_requests_per_connection Answered relay HTTP requests per HTTP connection opened, since the relay started.
                # TYPE webproxyd_requests_per_connection gauge
                webproxyd_requests_per_connection{relay="home"} 1.3333333333333333
                webproxyd_requests_per_connection{relay="work"} 0
                # HELP webproxyd_carrier_request_seconds Time from sending a relay HTTP request to its answer (long polls included).
                # TYPE webproxyd_carrier_request_seconds histogram
                webproxyd_carrier_request_seconds_bucket{relay="home",carrier="bootstrap",le="0.05"} 1
                webproxyd_carrier_request_seconds_bucket{relay="home",carrier="bootstrap",le="0.1"} 1
                webproxyd_carrier_request_seconds_bucket{relay="home",carrier="bootstrap",le="0.25"} 1
                webproxyd_carrier_request_seconds_bucket{relay="home",carrier="bootstrap",le="0.5"} 2
                webproxyd_carrier_request_seconds_bucket{relay="home",carrier="bootstrap",le="1"} 2
                webproxyd_carrier_request_seconds_bucket{relay="home",carrier="bootstrap",le="2.5"} 2
                webproxyd_carrier_request_seconds_bucket{relay="home",carrier="bootstrap",le="5"} 2
                webproxyd_carrier_request_seconds_bucket{relay="home",carrier="bootstrap",le="10"} 2
                webproxyd_carrier_request_seconds_bucket{relay="home",carrier="bootstrap",le="30"} 2
                webproxyd_carrier_request_seconds_bucket{relay="home",carrier="bootstrap",le="+Inf"} 2
                webproxyd_carrier_request_seconds_sum{relay="home",carrier="bootstrap"} 0.34
                webproxyd_carrier_request_seconds_count{relay="home",carrier="bootstrap"} 2
                webproxyd_carrier_request_seconds_bucket{relay="home",carrier="https",le="0.05"} 0
                webproxyd_carrier_request_seconds_bucket{relay="home",carrier="https",le="0.1"} 0
                webproxyd_carrier_request_seconds_bucket{relay="home",carrier="https",le="0.25"} 0
                webproxyd_carrier_request_seconds_bucket{relay="home",carrier="https",le="0.5"} 0
                webproxyd_carrier_request_seconds_bucket{relay="home",carrier="https",le="1"} 0
                webproxyd_carrier_request_seconds_bucket{relay="home",carrier="https",le="2.5"} 0
                webproxyd_carrier_request_seconds_bucket{relay="home",carrier="https",le="5"} 0
                webproxyd_carrier_request_seconds_bucket{relay="home",carrier="https",le="10"} 0
                webproxyd_carrier_request_seconds_bucket{relay="home",carrier="https",le="30"} 1
                webproxyd_carrier_request_seconds_bucket{relay="home",carrier="https",le="+Inf"} 2
                webproxyd_carrier_request_seconds_sum{relay="home",carrier="https"} 56
                webproxyd_carrier_request_seconds_count{relay="home",carrier="https"} 2

                """)
    }

    @Test func theLoopsOwnWorkIsOneFamilyEach() {
        var counters = LoopCounters()
        counters.wakeups = 9
        counters.socketReads = 40
        counters.socketWrites = 30
        counters.tlsRecordsReceived = 20
        counters.tlsRecordsSent = 10
        counters.webSocketMessagesReceived = 4
        counters.webSocketMessagesSent = 3
        #expect(
            PrometheusText.render(loop: counters) == """
                # HELP webproxyd_loop_wakeups_total Times the event loop woke up with work to do.
                # TYPE webproxyd_loop_wakeups_total counter
                webproxyd_loop_wakeups_total 9
                # HELP webproxyd_loop_socket_calls_total TCP socket calls that moved bytes: read (reads that returned bytes or EOF) and write (sendmsg).
                # TYPE webproxyd_loop_socket_calls_total counter
                webproxyd_loop_socket_calls_total{direction="read"} 40
                webproxyd_loop_socket_calls_total{direction="write"} 30
                # HELP webproxyd_loop_tls_records_total TLS records received from peers (down) and sent to them (up).
                # TYPE webproxyd_loop_tls_records_total counter
                webproxyd_loop_tls_records_total{direction="down"} 20
                webproxyd_loop_tls_records_total{direction="up"} 10
                # HELP webproxyd_loop_websocket_messages_total WebSocket data messages received (down) and sent (up).
                # TYPE webproxyd_loop_websocket_messages_total counter
                webproxyd_loop_websocket_messages_total{direction="down"} 4
                webproxyd_loop_websocket_messages_total{direction="up"} 3

                """)
    }

    @Test func labelValuesAreEscaped() {
        #expect(PrometheusText.escape(#"a"b\c"# + "\nd") == #"a\"b\\c\nd"#)
    }

    @Test func aBoundaryValueFallsInItsOwnBucket() {
        var histogram = LatencyHistogram()
        histogram.observe(.milliseconds(100))
        #expect(histogram.cumulativeCounts == [0, 1, 1, 1, 1, 1, 1, 1, 1, 1])
    }
}
