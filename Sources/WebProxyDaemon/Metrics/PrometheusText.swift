import WebProxyNet

/// The metrics in the Prometheus text exposition format (version 0.0.4). Every label value
/// comes from a bounded set: relay section names, fixed directions, error classes and
/// carrier labels.
enum PrometheusText {
    /// The `Content-Type` of the rendered text.
    static let contentType = "text/plain; version=0.0.4; charset=utf-8"

    static func render(version: String, relays: [RelaySnapshot]) -> String {
        var out = ""
        family(&out, "webproxyd_build_info", "gauge", "The running webproxyd version.")
        out += "webproxyd_build_info{version=\"\(escape(version))\"} 1\n"

        func perRelay(_ name: String, _ type: String, _ help: String, _ value: (RelaySnapshot) -> Int) {
            family(&out, name, type, help)
            for relay in relays { out += "\(name){relay=\"\(escape(relay.status.name))\"} \(value(relay))\n" }
        }
        perRelay("webproxyd_sessions_established_total", "counter", "Relay sessions that came up.") {
            $0.counters.sessionsEstablished
        }
        perRelay("webproxyd_session_up", "gauge", "1 while a relay session is up.") { $0.status.state == .up ? 1 : 0 }
        family(&out, "webproxyd_side_session_up", "gauge", "1 while a relay's media or transfer session is up (listed once started).")
        for relay in relays {
            for side in relay.status.sideSessions {
                out += "webproxyd_side_session_up{relay=\"\(escape(relay.status.name))\",role=\"\(side.role)\"} \(side.state == .up ? 1 : 0)\n"
            }
        }
        perRelay("webproxyd_streams", "gauge", "Local connections open now.") { $0.status.streams }
        perRelay(
            "webproxyd_connections_refused_total", "counter",
            "Local connections closed without reaching the relay (stream limit or no session in time)."
        ) { $0.status.refusedConnections }
        perRelay("webproxyd_reconnects_total", "counter", "Session builds started after a failure or a lost session.") {
            $0.counters.reconnects
        }

        family(&out, "webproxyd_bytes_total", "counter", "Payload bytes carried: up from local clients, down to them.")
        for relay in relays {
            let name = escape(relay.status.name)
            out += "webproxyd_bytes_total{relay=\"\(name)\",direction=\"up\"} \(relay.status.bytesUp)\n"
            out += "webproxyd_bytes_total{relay=\"\(name)\",direction=\"down\"} \(relay.status.bytesDown)\n"
        }

        family(&out, "webproxyd_frames_total", "counter", "Relay protocol frames: up (sent to the relay) and down (received).")
        for relay in relays {
            let name = escape(relay.status.name)
            out += "webproxyd_frames_total{relay=\"\(name)\",direction=\"up\"} \(relay.frames.sent)\n"
            out += "webproxyd_frames_total{relay=\"\(name)\",direction=\"down\"} \(relay.frames.received)\n"
        }

        family(&out, "webproxyd_queued_bytes", "gauge", "Bytes held for the relay's streams: up (read, not yet sent) and down (received, not yet written).")
        for relay in relays {
            let name = escape(relay.status.name)
            out += "webproxyd_queued_bytes{relay=\"\(name)\",direction=\"up\"} \(relay.queued.uplink)\n"
            out += "webproxyd_queued_bytes{relay=\"\(name)\",direction=\"down\"} \(relay.queued.downlink)\n"
        }
        perRelay("webproxyd_queued_bytes_peak", "gauge", "The most bytes one session of the relay held at once since the relay started.") {
            $0.queued.peakTotal
        }

        family(&out, "webproxyd_local_closes_total", "counter", "Local connections the daemon closed, by reason.")
        for relay in relays {
            for (reason, count) in relay.counters.localCloses.sorted(by: { $0.key < $1.key }) {
                out += "webproxyd_local_closes_total{relay=\"\(escape(relay.status.name))\",reason=\"\(escape(reason))\"} \(count)\n"
            }
        }

        family(&out, "webproxyd_errors_total", "counter", "Session failures by class.")
        for relay in relays {
            for (errorClass, count) in relay.counters.errors.sorted(by: { $0.key < $1.key }) {
                out += "webproxyd_errors_total{relay=\"\(escape(relay.status.name))\",class=\"\(escape(errorClass))\"} \(count)\n"
            }
        }

        family(&out, "webproxyd_tls_connections_total", "counter",
               "TLS connections to the relay with a completed handshake, by use, and whether they resumed a session.")
        for relay in relays {
            let name = escape(relay.status.name)
            let counts = relay.tlsConnections
            for (use, opened, resumed) in [("http", counts.http, counts.httpResumed),
                                           ("websocket", counts.webSocket, counts.webSocketResumed)] {
                out += "webproxyd_tls_connections_total{relay=\"\(name)\",use=\"\(use)\",resumed=\"yes\"} \(resumed)\n"
                out += "webproxyd_tls_connections_total{relay=\"\(name)\",use=\"\(use)\",resumed=\"no\"} \(opened - resumed)\n"
            }
        }
        perRelay("webproxyd_http2_connections_total", "counter", "HTTP connections to the relay that negotiated h2 (of use=\"http\").") {
            $0.tlsConnections.http2
        }
        perRelay("webproxyd_tls_connections_open", "gauge", "TLS connections to the relay open now (HTTP, busy or idle, and WebSockets).") {
            $0.tlsConnections.open
        }
        family(&out, "webproxyd_requests_per_connection", "gauge",
               "Answered relay HTTP requests per HTTP connection opened, since the relay started.")
        for relay in relays {
            out += "webproxyd_requests_per_connection{relay=\"\(escape(relay.status.name))\"} \(number(relay.requestsPerConnection))\n"
        }

        let histogram = "webproxyd_carrier_request_seconds"
        family(&out, histogram, "histogram", "Time from sending a relay HTTP request to its answer (long polls included).")
        for relay in relays {
            for (carrier, observed) in relay.counters.requestSeconds.sorted(by: { $0.key < $1.key }) {
                let labels = "relay=\"\(escape(relay.status.name))\",carrier=\"\(escape(carrier))\""
                let bounds = LatencyHistogram.bounds.map(number) + ["+Inf"]
                for (bound, count) in zip(bounds, observed.cumulativeCounts) {
                    out += "\(histogram)_bucket{\(labels),le=\"\(bound)\"} \(count)\n"
                }
                out += "\(histogram)_sum{\(labels)} \(observed.sumText)\n"
                out += "\(histogram)_count{\(labels)} \(observed.count)\n"
            }
        }
        return out
    }

    /// The event loop's own work, which all relays share: divided by the bytes moved, it
    /// explains the CPU a run costs per GiB.
    static func render(loop counters: LoopCounters) -> String {
        var out = ""
        func counter(_ name: String, _ help: String, _ values: [(String?, Int)]) {
            family(&out, "webproxyd_loop_\(name)_total", "counter", help)
            for (direction, value) in values {
                out += "webproxyd_loop_\(name)_total\(direction.map { "{direction=\"\($0)\"}" } ?? "") \(value)\n"
            }
        }
        counter("wakeups", "Times the event loop woke up with work to do.", [(nil, counters.wakeups)])
        counter(
            "socket_calls", "TCP socket calls that moved bytes: read (reads that returned bytes or EOF) and write (sendmsg).",
            [("read", counters.socketReads), ("write", counters.socketWrites)])
        counter(
            "tls_records", "TLS records received from peers (down) and sent to them (up).",
            [("down", counters.tlsRecordsReceived), ("up", counters.tlsRecordsSent)])
        counter(
            "websocket_messages", "WebSocket data messages received (down) and sent (up).",
            [("down", counters.webSocketMessagesReceived), ("up", counters.webSocketMessagesSent)])
        return out
    }

    private static func family(_ out: inout String, _ name: String, _ type: String, _ help: String) {
        out += "# HELP \(name) \(help)\n# TYPE \(name) \(type)\n"
    }

    /// A label value with `\`, `"` and newlines escaped.
    static func escape(_ value: String) -> String {
        var escaped = ""
        for character in value {
            switch character {
            case "\\": escaped += "\\\\"
            case "\"": escaped += "\\\""
            case "\n": escaped += "\\n"
            default: escaped.append(character)
            }
        }
        return escaped
    }

    /// `1` rather than `1.0` for whole numbers; Swift's shortest form otherwise.
    static func number(_ value: Double) -> String {
        if value == value.rounded(), abs(value) < 1e15 { return String(Int64(value)) }
        return "\(value)"
    }
}
