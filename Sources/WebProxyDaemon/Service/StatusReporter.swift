/// Sends `STATUS=` lines (the notifier keeps them to one a second): the same relay status
/// `webproxyd status` shows and the metrics export, as one line for `systemctl status`.
struct StatusReporter {
    let notifier: ServiceNotifier

    /// Offers the status of `relays`; a status offered too soon is sent by a later offer.
    func report(_ relays: [RelayStatusEntry], now: Duration) {
        notifier.status(Self.text(for: relays), now: now)
    }

    /// One line: `home: up (https), 2 streams, 1.5 KiB up, 3.0 MiB down, media session down;
    /// work: down, 0 streams, 0 B up, 0 B down, last error: unreachable`. Side sessions that
    /// are up go unmentioned.
    static func text(for relays: [RelayStatusEntry]) -> String {
        guard !relays.isEmpty else { return "no relays" }
        return relays.map(text(for:)).joined(separator: "; ")
    }

    static func text(for relay: RelayStatusEntry) -> String {
        var text = "\(relay.name): \(relay.state.rawValue)"
        if let carrier = relay.carrier { text += " (\(carrier))" }
        text += ", \(relay.streams) stream\(relay.streams == 1 ? "" : "s")"
        text += ", \(byteCount(relay.bytesUp)) up, \(byteCount(relay.bytesDown)) down"
        for side in relay.sideSessions where side.state != .up { text += ", \(side.role) session \(side.state.rawValue)" }
        if let error = relay.lastError?.class { text += ", last error: \(error)" }
        return text
    }

    /// Bytes, KiB, MiB or GiB with one decimal.
    static func byteCount(_ count: Int) -> String {
        guard count >= 1024 else { return "\(count) B" }
        var value = Double(count) / 1024
        for unit in ["KiB", "MiB", "GiB"] {
            if value < 1024 || unit == "GiB" {
                let tenths = Int((value * 10).rounded())
                return "\(tenths / 10).\(tenths % 10) \(unit)"
            }
            value /= 1024
        }
        return "\(count) B"
    }
}
