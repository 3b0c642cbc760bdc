/// `webproxyd status` for people: one line per relay in aligned columns, then each relay's
/// side sessions and its last error on lines of their own.
enum StatusTable {
    static func render(_ document: StatusDocument) -> String {
        var text = "webproxyd \(document.version), pid \(document.pid), \(document.generatedAt)\n"
        guard !document.relays.isEmpty else { return text + "no relays\n" }
        let header = ["RELAY", "LISTEN", "STATE", "CARRIER", "STREAMS", "REFUSED", "UP", "DOWN", "SESSIONS", "RECONNECTS"]
        // Counts are right-aligned, words left-aligned.
        let numeric = [false, false, false, false, true, true, true, true, true, true]
        let rows = document.relays.map { relay in
            [
                relay.name, relay.listen, relay.state.rawValue, relay.carrier ?? "-", "\(relay.streams)",
                "\(relay.refusedConnections)", StatusReporter.byteCount(relay.bytesUp),
                StatusReporter.byteCount(relay.bytesDown), "\(relay.sessionsEstablished)", "\(relay.reconnects)",
            ]
        }
        let widths = header.indices.map { column in ([header] + rows).map { $0[column].count }.max() ?? 0 }
        for row in [header] + rows {
            let cells = row.indices.map { column in
                let padding = String(repeating: " ", count: widths[column] - row[column].count)
                return numeric[column] ? padding + row[column] : row[column] + padding
            }
            text += cells.joined(separator: "  ").trimmingTrailingSpaces() + "\n"
        }
        for relay in document.relays where !relay.sideSessions.isEmpty {
            let sessions = relay.sideSessions.map { side in
                "\(side.role) session \(side.state.rawValue) (\(side.streams) stream\(side.streams == 1 ? "" : "s"))"
            }
            text += "\(relay.name): \(sessions.joined(separator: ", "))\n"
        }
        for relay in document.relays {
            guard let error = relay.lastError else { continue }
            text += "\(relay.name): last error \(error.class), \(ago(error.secondsAgo)) (\(error.at)): \(error.message)\n"
        }
        return text
    }

    /// `45 s ago`, `12 min ago`, `3 h ago`, `2 d ago`.
    static func ago(_ seconds: Int) -> String {
        switch seconds {
        case ..<120: "\(seconds) s ago"
        case ..<7200: "\(seconds / 60) min ago"
        case ..<172_800: "\(seconds / 3600) h ago"
        default: "\(seconds / 86400) d ago"
        }
    }
}

extension String {
    fileprivate func trimmingTrailingSpaces() -> String {
        var text = self
        while text.last == " " { text.removeLast() }
        return text
    }
}
